#!/bin/bash
# `make bench` on a GPU: training images/s of cifar-train --device cuda at batch 32 and 256 per GPU (sample
# order + augmentation on the CPU + the step on the GPU, as in training: the epochs' own images_per_sec from
# --log-json, median of epochs 2..EPOCHS) next to the PyTorch peer on the same GPU (trainer/bench/torch_peer.py with
# DEVICE=cuda: same model, recipe, augmentation on the CPU, batch; FP32 without TF32 on both sides).
# The peer needs a CUDA build of torch (Debian's python3-torch is CPU-only; TORCH_PYTHON names another
# interpreter): it is skipped, saying so, where torch.cuda.is_available() is false.
# NCCL bus bandwidth on device buffers: libcollective/bench/run-bench (also in `make bench`).
set -eu
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
EPOCHS=${EPOCHS:-6}
SECONDS_EACH=${SECONDS_EACH:-10}
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
cuda=$("$bin" --version | sed -n 's/^cuda: //p')
case $cuda in
[1-9]*) ;;
*) echo "trainer-gpu-bench: skipped: no CUDA device (cifar-train --version: cuda: $cuda)"; exit 0 ;;
esac
[ -f "$DATA/data_batch_1.bin" ] || { echo "trainer-gpu-bench: $DATA not present, nothing measured"; exit 0; }
data=$(cd "$DATA" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /' || true
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
have_torch=0
"$TORCH_PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && have_torch=1
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-gpu-bench.XXXXXX")
mkdir "$work/out"
trap 'rm -rf "$work"' EXIT
for batch in 32 256; do
    (cd "$work" && "$bin" --data "$data" --device cuda --batch-size "$batch" --epochs "$EPOCHS" \
        --log-every 0 --log-json "run-$batch.json" --dir out --checkpoint-dir out >/dev/null)
    /usr/bin/python3 - "$work/run-$batch.json" "$batch" <<'PY'
import json, statistics, sys
ips = [l["images_per_sec"] for l in map(json.loads, open(sys.argv[1])) if l["type"] == "epoch"][1:]
print("ours  train     device=cuda batch=%s: %7.1f img/s (median of epochs 2..%d: %s)" %
      (sys.argv[2], statistics.median(ips), len(ips) + 1, " ".join("%.0f" % v for v in ips)))
PY
    if [ $have_torch = 1 ]; then
        DEVICE=cuda "$TORCH_PYTHON" trainer/bench/torch_peer.py bench "$DATA" 2 "$batch" "$SECONDS_EACH"
    fi
done
[ $have_torch = 1 ] || echo "(no CUDA build of torch at $TORCH_PYTHON: no PyTorch GPU figures; set TORCH_PYTHON)"
