#!/bin/bash
# Resuming from a checkpoint continues exactly as an uninterrupted run (single rank, same seed):
# 3 epochs in one go vs 2 epochs then --resume checkpoint-2.h5 for the third; the final models (weights and
# RMSprop state) must be identical, checked with h5py. Also `cifar-train evaluate` on the result.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
need_python h5py numpy
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-resume.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
common=(--device cpu --data "$data" --limit-train 80 --limit-test 40 --threads 2 --seed 5)
mkdir "$work/a" "$work/b"
(cd "$work/a" && "$bin" "${common[@]}" --epochs 3 --dir . >log)
(cd "$work/b" && "$bin" "${common[@]}" --epochs 2 --dir . >log && rm -r saved_models &&
    "$bin" "${common[@]}" --epochs 3 --dir . --resume checkpoint-2.h5 >log2)
grep -q '^Epoch 3/3$' "$work/b/log2" && ! grep -q '^Epoch [12]/3$' "$work/b/log2" ||
    { echo "FAIL: the resumed run did not start at epoch 3"; cat "$work/b/log2"; exit 1; }
/usr/bin/python3 tests/trainer/h5_same.py "$work/a/saved_models/keras_cifar10_trained_model.h5" \
    "$work/b/saved_models/keras_cifar10_trained_model.h5"
"$bin" evaluate "$work/a/saved_models/keras_cifar10_trained_model.h5" --data "$data" --limit-test 40 --threads 2 >"$work/eval"
cat "$work/eval"
want=$(grep '^Test accuracy' "$work/a/log")
grep -qx "$want" "$work/eval" || { echo "FAIL: evaluate disagrees with the run's '$want'"; exit 1; }
