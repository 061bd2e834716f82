#!/bin/bash
# `make bench-accuracy` (not part of `make check`: about 2 x 3 full runs): the tutorial's recipe to the end,
# cifar-train next to the PyTorch peer (trainer/bench/torch_peer.py: same model, recipe and data), for each
# seed, then a table of the final test accuracy per seed, the means and the wall times.
#   EPOCHS (default 100), SEEDS (default "0 1 2"), DATA (default ../shared/data/cifar-10-batches-bin-subset),
#   THREADS (default: all CPUs), DEVICE (cuda when cifar-train sees a GPU, else cpu; the peer follows it and
#   needs a CUDA build of torch for cuda, named with TORCH_PYTHON), TORCH_PYTHON (default /usr/bin/python3).
# One run at a time, ours then the peer, so the two never share the machine.
set -eu
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
EPOCHS=${EPOCHS:-100}
SEEDS=${SEEDS:-0 1 2}
THREADS=${THREADS:-$(nproc)}
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}
[ -f "$DATA/data_batch_1.bin" ] || { echo "accuracy-bench: $DATA not present, nothing measured"; exit 0; }
if [ -z "${DEVICE:-}" ]; then
    DEVICE=cpu
    "$BUILD/bin/cifar-train" --version 2>/dev/null | grep -q 'cuda: [1-9][0-9]* device' && DEVICE=cuda
fi
have_torch=1
if ! "$TORCH_PYTHON" -c 'import torch' 2>/dev/null; then
    have_torch=0
elif [ "$DEVICE" = cuda ] && ! "$TORCH_PYTHON" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())'; then
    have_torch=0
fi
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "device $DEVICE, $THREADS threads, $EPOCHS epochs, seeds $SEEDS, data $DATA"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results
: >"$results"
now() { date +%s.%N; }
elapsed() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }
for seed in $SEEDS; do
    mkdir -p "$work/ours-$seed"
    t0=$(now)
    OMP_NUM_THREADS=$THREADS "$BUILD/bin/cifar-train" --data "$DATA" --dir "$work/ours-$seed" \
        --checkpoint-dir "$work/ours-$seed" --epochs "$EPOCHS" --seed "$seed" --threads "$THREADS" \
        --device "$DEVICE" --log-json "$work/ours-$seed/log.json" >"$work/ours-$seed.log" 2>&1 ||
        { echo "cifar-train seed $seed failed:"; tail -5 "$work/ours-$seed.log"; exit 1; }
    acc=$(sed -n 's/^Test accuracy: //p' "$work/ours-$seed.log" | tail -1)
    echo "ours $seed $acc $(elapsed "$t0")" | tee -a "$results"
    rm -rf "$work/ours-$seed" # checkpoints: 15 MB per epoch
    if [ $have_torch = 1 ]; then
        t0=$(now)
        SEED=$seed DEVICE=$DEVICE OPENBLAS_NUM_THREADS=1 "$TORCH_PYTHON" trainer/bench/torch_peer.py train "$DATA" \
            "$EPOCHS" "$THREADS" >"$work/torch-$seed.log" 2>&1 ||
            { echo "torch peer seed $seed failed:"; tail -5 "$work/torch-$seed.log"; exit 1; }
        acc=$(sed -n 's/^Test accuracy: //p' "$work/torch-$seed.log" | tail -1)
        echo "torch $seed $acc $(elapsed "$t0")" | tee -a "$results"
    fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
trainer/bench/accuracy-table.awk "$results"
[ $have_torch = 1 ] || echo "(no usable torch in $TORCH_PYTHON for device $DEVICE: no PyTorch figures)"
