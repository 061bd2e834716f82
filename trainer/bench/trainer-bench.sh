#!/bin/bash
# `make bench` for the trainer: training images/s (batch 32, order + augmentation + step) and inference
# images/s of cifar-train's compute (build/bin/trainer-bench) next to the PyTorch peer (trainer/bench/torch_peer.py)
# on the real CIFAR-10 subset, with 1 and 2 threads, in the same run; then each layer's forward and backward
# time per step, both processes' peak RSS, and the share of the machine's FP32 peak that each reaches
# (build/bin/flops-probe measures the peak at the start; trainer-bench counts the model's FLOPs per image).
# Machines running other jobs make single measurements swing by 2x, so ours and PyTorch's alternate,
# ROUNDS times (default 3), SECONDS_EACH seconds of training each (default 10; inference half of that; the
# per-layer loop LAYER_SECONDS, default half of it), and the tables give the median of each figure over the
# rounds and ratios of those medians (trainer/bench/trainer-bench-table.awk).
# PASSES (default: "all", and "avx2" too on a CPU with AVX-512) says which instruction sets to measure: "all"
# as the CPU is; "avx2" with oneDNN held to AVX2 on both sides (DNNL_MAX_CPU_ISA=AVX2, which our oneDNN and
# torch's, the same library, obey) and flops-probe's peak to AVX2's, as an AVX2-only CPU runs: oneDNN then
# has no Winograd, so our convolutions take their AVX2 path (trainer/src/cpu/cpu_wino.h), the program choosing
# it from oneDNN's answer and the CPU's features, never from the variable.
set -eu
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
SECONDS_EACH=${SECONDS_EACH:-10}
ROUNDS=${ROUNDS:-3}
LAYER_SECONDS=${LAYER_SECONDS:-$(awk -v s="$SECONDS_EACH" 'BEGIN { print s / 2 }')}
[ -f "$DATA/data_batch_1.bin" ] || { echo "trainer-bench: $DATA not present, nothing measured"; exit 0; }
have_torch=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || have_torch=0
PASSES=${PASSES:-all$(grep -qw avx512f /proc/cpuinfo && echo ' avx2' || true)}
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'avx2|fma|avx512f' | tr '\n' ' ')
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) (family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')," \
     "model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), $(nproc) cores, ${cpu_flags}; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}; $ROUNDS rounds of ${SECONDS_EACH} s, ours and PyTorch alternating"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Both sides get the same threads, set explicitly: OpenMP's pool (ours, oneDNN, torch), and OpenBLAS kept to
# one thread (its own pthreads pool would spin beside torch's OpenMP threads). The peer prints its build
# and threading configuration once.
[ $have_torch = 1 ] && PEER_CONFIG=1 OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 trainer/bench/torch_peer.py \
    bench "$DATA" 2 32 1 | grep '^#' | grep -E 'PyTorch version|OpenMP|MKL|oneDNN|ATen parallel|threads|CPU capability'
for pass in $PASSES; do
    case $pass in
    all) echo "== instruction sets: all this CPU has"; unset DNNL_MAX_CPU_ISA; probe_isa= ;;
    avx2) echo "== instruction sets: AVX2 (DNNL_MAX_CPU_ISA=AVX2 for both sides, flops-probe --max-isa avx2)"
          export DNNL_MAX_CPU_ISA=AVX2; probe_isa="--max-isa avx2" ;;
    *) echo "trainer-bench: PASSES takes all and avx2, not $pass"; exit 2 ;;
    esac
    : >"$log"
    # The peak first, on a machine as quiet as the rest of the run will see.
    "$BUILD/bin/flops-probe" $probe_isa 1 2 | tee -a "$log"
    for r in $(seq "$ROUNDS"); do
        echo "round $r: load $(cut -d' ' -f1-3 /proc/loadavg)"
        for t in 1 2; do
            # Everything goes to the log for the tables; the throughput lines are shown as they come.
            OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=1 "$BUILD/bin/trainer-bench" "$DATA" "$t" 32 "$SECONDS_EACH" \
                "$LAYER_SECONDS" | tee -a "$log" | awk '/^ours (train|inference) /'
            [ $have_torch = 1 ] && OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=1 /usr/bin/python3 trainer/bench/torch_peer.py \
                bench "$DATA" "$t" 32 "$SECONDS_EACH" "$LAYER_SECONDS" | tee -a "$log" | awk '/^torch (train|inference(-[a-z_]+)?) /'
        done
    done
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
    grep -m1 '^ours paths:' "$log" || true
    awk -v rounds="$ROUNDS" -f trainer/bench/trainer-bench-table.awk "$log"
done
echo "How: img/s = images / wall time of a loop (train: order + augmentation + forward + backward + RMSprop on one"
echo "thread's loop, $SECONDS_EACH s after 5 warm-up steps; inference: forward over the test images, $((SECONDS_EACH / 2)) s after a"
echo "warm-up pass, batches of 32 as Keras's evaluate; where oneDNN has Winograd (AVX-512) ours runs the layers up"
echo "to the Flatten image by image through its inference engine, trainer/src/cpu/cpu_infer.h, and the dense layers"
echo "over the batch; where it has none (AVX2) ours runs row by row with its own AVX2 Winograd, cpu_wino.h; the"
echo "'ours paths' line says which ran; the peer's is the faster of eager no_grad and its model traced, frozen and"
echo "passed through torch.jit.optimize_for_inference, both printed). CPU ms per step: user + system time of all"
echo "the process's threads over the timed training loop (getrusage / time.process_time), which a shared machine"
echo "stretches much less than wall time."
echo "Per layer: a separate $LAYER_SECONDS s training loop after the same warm-up, wall time between"
echo "layer boundaries (ours: a trace hook at each table row, model.h; the peer: module forward pre-hooks and"
echo "hooks on each module's output gradient); a group is a Conv2D/MaxPooling2D/Dense with the layers fused or"
echo "following it; update = the rest of the step. %peak = MFLOP per image x img/s / flops-probe's FP32 FMA peak"
echo "at the same thread count; Winograd convolutions do fewer multiplications than counted, so a layer can"
echo "exceed 100%. Peak RSS: getrusage(RUSAGE_SELF).ru_maxrss of each whole process at its end (the peer's"
echo "includes the Python interpreter and torch's libraries). Passes ($PASSES): all = as this CPU is; avx2 = oneDNN"
echo "held to AVX2 for both sides (DNNL_MAX_CPU_ISA=AVX2) and the peak to AVX2's, as on an AVX2-only CPU."
[ $have_torch = 1 ] || echo "(python3-torch not installed: no PyTorch figures)"
