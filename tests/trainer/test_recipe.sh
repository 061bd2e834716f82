#!/bin/bash
# One recipe across ranks: cifar-train started under mpirun with a rank that differs in --batch-size, in
# --epochs, or in its data (a copy of the subset with five images cut off, or with one pixel changed)
# refuses to start on every rank: non-zero exit within 10 s, and rank 0 names the rank and the fields.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
command -v mpirun >/dev/null || { echo "SKIP(dep): mpirun not installed"; exit 77; }
need_data
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
export ASAN_OPTIONS=detect_leaks=0
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-recipe.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
# Two other data sets, each sound in itself (equal record counts, its own SHA256SUMS: cifar-train's integrity
# checks pass), so that only the recipe comparison can tell them from the subset: the last image of every
# file cut (5 training images fewer; the test set is cut to 64 images by --limit-test), and one test pixel
# changed.
cp -r "$data" "$work/cut" && cp -r "$data" "$work/changed"
for f in "$work"/cut/*_batch*.bin; do truncate -s $(($(stat -c %s "$f") - 3073)) "$f"; done
printf '\x55' | dd of="$work/changed/test_batch.bin" bs=1 seek=5000 conv=notrunc status=none
cmp -s "$data/test_batch.bin" "$work/changed/test_batch.bin" && { echo "FAIL: the pixel did not change"; exit 1; }
for d in cut changed; do (cd "$work/$d" && sha256sum data_batch_*.bin test_batch.bin >SHA256SUMS); done

common=(--device cpu --threads 1 --epochs 1 --limit-test 64 --dir "$work/out" --checkpoint-dir "$work/out")
# refused NAME PATTERN RANK0-ARGS -- RANK1-ARGS
refused() {
    local name=$1 pattern=$2 a=() rc=0 t0
    shift 2
    while [ "$1" != -- ]; do a+=("$1"); shift; done
    shift
    echo "== $name"
    t0=$(date +%s)
    timeout 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$bin" "${common[@]}" "${a[@]}" : \
        -np 1 "$bin" "${common[@]}" "$@" >"$work/log" 2>&1 || rc=$?
    cat "$work/log"
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: $name: exit status $rc, expected a refusal"; exit 1; }
    [ $(($(date +%s) - t0)) -le 10 ] || { echo "FAIL: $name: the refusal took more than 10 s"; exit 1; }
    grep -Eq -- "$pattern" "$work/log" || { echo "FAIL: $name: no line matching '$pattern'"; exit 1; }
    grep -q '^Epoch 1/' "$work/log" && { echo "FAIL: $name: training started"; exit 1; }
    [ ! -e "$work/out" ] || { echo "FAIL: $name: files written"; exit 1; }
}
refused "--batch-size" '^rank 1: batch_size 64 \(rank 0: 32\)$' --data "$data" -- --data "$data" --batch-size 64
refused "--epochs" '^rank 1: epochs 3 \(rank 0: 1\)$' --data "$data" -- --data "$data" --epochs 3
refused "--no-augmentation" '^rank 1: augmentation 0 \(rank 0: 1\)$' --data "$data" -- --data "$data" --no-augmentation
refused "five images fewer" '^rank 1: train_images 5080 \(rank 0: 5085\), train_data [0-9a-f]{16} \(rank 0: [0-9a-f]{16}\)$' \
    --data "$data" -- --data "$work/cut"
refused "one pixel changed" '^rank 1: test_data [0-9a-f]{16} \(rank 0: [0-9a-f]{16}\)$' --data "$data" -- --data "$work/changed"
grep -q 'cifar-train: 1 of 2 ranks would run another recipe than rank 0; no rank starts' "$work/log" ||
    { echo "FAIL: no headline"; exit 1; }
echo "PASS: test_recipe"
