#!/bin/bash
# `make bench` for the trainer: training images/s (batch 32, order + augmentation + step) and inference
# images/s of cifar-train's compute (build/bin/trainer-bench) next to the PyTorch peer (bench/torch_peer.py)
# on the real CIFAR-10 subset, with 1 and 2 threads, in the same run. SECONDS per measurement (default 10).
set -eu
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
SECONDS_EACH=${SECONDS_EACH:-10}
[ -f "$DATA/data_batch_1.bin" ] || { echo "trainer-bench: $DATA not present, nothing measured"; exit 0; }
have_torch=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || have_torch=0
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}"
for t in 1 2; do
    "$BUILD/bin/trainer-bench" "$DATA" "$t" 32 "$SECONDS_EACH"
    [ $have_torch = 1 ] && /usr/bin/python3 bench/torch_peer.py bench "$DATA" "$t" 32 "$SECONDS_EACH"
done
[ $have_torch = 1 ] || echo "(python3-torch not installed: no PyTorch figures)"
