#!/bin/bash
# Lockstep: cifar-train exports its first 200 training steps (--dump-steps: two epochs' worth of the 5085-image
# subset, so an epoch boundary and the 29-image last batch are in) and test_lockstep.py, an independent
# PyTorch float64 implementation of the Keras recipe, checks the inputs, order, labels and masks and retrains
# single steps from the exported states. Then the same from a checkpoint whose iteration count is set to
# 100,000 with h5py, where Keras's learning-rate decay (1 / (1 + 1e-6 * iterations) = 0.91) is visible.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
need_python h5py numpy scipy.ndimage torch
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-lockstep.XXXXXX")
trap 'rm -rf "$work"' EXIT
common=(--device cpu --data "$DATA" --threads 2 --seed 3 --dir "$work" --checkpoint-dir "$work")

"$BUILD/bin/cifar-train" "${common[@]}" --epochs 2 --dump-steps 200 --dump-dir "$work/run" >"$work/log"
/usr/bin/python3 tests/trainer/test_lockstep.py "$work/run" "$DATA"

/usr/bin/python3 -c '
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["batchai_training_state"].attrs["iterations"] = 100000' "$work/checkpoint-1.h5"
"$BUILD/bin/cifar-train" "${common[@]}" --epochs 2 --resume "$work/checkpoint-1.h5" --dump-steps 2 \
    --dump-dir "$work/late" >"$work/log2"
/usr/bin/python3 tests/trainer/test_lockstep.py "$work/late" "$DATA" --expect-decay-visible
