#!/bin/bash
# `make bench-gpu`: cifar-train's CUDA path against PyTorch on the same GPU, at batch 32, 256 and 1024, in
# FP32 and TF32, end to end (sample order, augmentation and the step: ours augments on the GPU through the
# input ring, the peer on the CPU as its recipe does) and step only (one batch already on the GPU), with
# PyTorch eager and, where the installed torch has it, torch.compile (reduce-overhead: CUDA graphs).
# Both sides: THREADS host threads (default 1), 5 warm-up steps, wall clock over SECONDS (default 10),
# the device drained before the clock stops (trainer-gpu-bench, torch_peer.py gpu); peak GPU memory is
# the process's largest `nvidia-smi --query-compute-apps used_memory` sampled every 0.1 s, the same
# method for both. Without a GPU it says so and exits 0; the peer needs a CUDA build of torch
# (TORCH_PYTHON names its interpreter), and is left out, saying so, where torch.cuda is unavailable.
set -eu
cd "$(dirname "$0")/../.."
. tests/gpu-env.sh
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
SECONDS_EACH=${SECONDS_EACH:-10}
THREADS=${THREADS:-1}
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}
# The table's rows (run-gpu-checks asks for fewer): batches, maths, the peer's modes (torch_peer.py gpu), and
# whether conv-cudnn-bench's layer table follows.
BATCHES=${BATCHES:-32 256 1024}
MATHS=${MATHS:-fp32 tf32}
HOWS=${HOWS:-eager compile}
CONV_CUDNN=${CONV_CUDNN:-1}
export THREADS OMP_NUM_THREADS=$THREADS
ours=$BUILD/bin/trainer-gpu-bench
if gpu_absent; then
    echo "bench-gpu: skipped: no GPU on this machine (no /dev/nvidia*, nothing in nvidia-smi -L)"
    exit 0
fi
[ -x "$ours" ] || { echo "bench-gpu: $ours was not built (no nvcc/cuBLAS at build time)"; exit 1; }
[ -f "$DATA/data_batch_1.bin" ] || { echo "bench-gpu: skipped: $DATA not present"; exit 0; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/GPU: /'
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; threads $THREADS; $SECONDS_EACH s each"
have_torch=0
"$TORCH_PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && have_torch=1

# Runs a command, printing its last line with the peak GPU memory of its process appended.
peak() {
    local log mem=0 pid m
    log=$(mktemp)
    "$@" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        m=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
            awk -F', *' -v p="$pid" '$1 == p { print $2 }')
        [ -n "$m" ] && [ "$m" -gt "$mem" ] && mem=$m
        sleep 0.1
    done
    wait "$pid" || { echo "FAILED ($*):"; cat "$log"; rm -f "$log"; return 1; }
    echo "$(tail -n 1 "$log")  peak ${mem} MiB"
    rm -f "$log"
}

for batch in $BATCHES; do
    for math in $MATHS; do
        for what in train step; do
            peak "$ours" "$DATA" "$batch" "$SECONDS_EACH" "$math" "$what"
            if [ $have_torch = 1 ]; then
                for how in $HOWS; do
                    peak env DEVICE=cuda "$TORCH_PYTHON" trainer/bench/torch_peer.py gpu "$DATA" "$batch" "$SECONDS_EACH" "$math" "$what" "$how"
                done
            fi
        done
    done
done
# Per convolution layer: the table's im2col + SGEMM against cuDNN's fastest algorithm (conv-cudnn-bench).
cudnn=$BUILD/bin/conv-cudnn-bench
if [ "$CONV_CUDNN" = 0 ]; then
    :
elif [ -x "$cudnn" ]; then
    for batch in 32 256; do
        for math in fp32 tf32; do
            "$cudnn" "$batch" "$math"
        done
    done
else
    echo "(no $cudnn: built only where cudnn.h and libcudnn are found)"
fi
[ $have_torch = 1 ] || echo "(no CUDA build of torch at $TORCH_PYTHON: no PyTorch figures; set TORCH_PYTHON)"
