#!/bin/bash
# cifar-train's checks before and during work, each fault injected for real (one process, small slices):
#  options that overflow, --threads above the CPUs it may use, output directories that cannot be made,
#  a truncated data file (with and without SHA256SUMS), a diverging run (--lr 1e30), checkpoints with a NaN
#  weight or a flipped low bit (--resume and evaluate), a stale temporary file, and resuming with another
#  thread count, world size or batch size.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
need_python h5py numpy
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-faults.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
h5=tests/trainer/test_io_h5check.py
small=(--device cpu --limit-train 64 --limit-test 32 --threads 1 --epochs 1)

# expect STATUS TEXT CMD...: CMD (run in $work/run) exits STATUS and its output holds TEXT; prints the line.
expect() {
    local want=$1 text=$2 rc=0
    shift 2
    rm -rf "$work/run" && mkdir "$work/run"
    (cd "$work/run" && "$@") >"$work/out" 2>&1 || rc=$?
    if [ "$rc" != "$want" ] || ! grep -qF -- "$text" "$work/out"; then
        echo "FAIL: $* -> status $rc (want $want), output lacks '$text':"
        cat "$work/out"
        exit 1
    fi
    grep -F -- "$text" "$work/out" | head -1
}

# Options: overflow and range, refused before anything runs.
expect 1 "--epochs: '4294967297' is not an integer from 1 to 2147483647" "$bin" --data "$data" --epochs 4294967297
expect 1 "--batch-size: '4294967296' is not an integer from 1 to" "$bin" --data "$data" --batch-size 4294967296
expect 1 "--seed: '-1' is not an integer from 0 to" "$bin" --data "$data" --seed -1
expect 1 "--limit-train: '99999999999999999999' is not an integer" "$bin" --data "$data" --limit-train 99999999999999999999

# --threads above the CPUs of the affinity mask: capped with a warning, and the run goes on.
if command -v taskset >/dev/null; then
    expect 0 "warning: --threads 1000 is more than the 1 CPU this process may run on (sched_getaffinity): using 1" \
        taskset -c 0 "$bin" --data "$data" "${small[@]}" --threads 1000
fi

# Output directories: refused before the data is read or epoch 1 starts.
touch "$work/file"
expect 1 "--dir $work/file/saved_models: cannot create directory: Not a directory" \
    "$bin" --data "$data" "${small[@]}" --dir "$work/file"
expect 1 "--checkpoint-dir $work/file: not a directory" "$bin" --data "$data" "${small[@]}" --checkpoint-dir "$work/file"
! grep -q '^Epoch 1/' "$work/out" || { echo "FAIL: training started before the output check"; exit 1; }
expect 0 "Saved trained model" "$bin" --data "$data" "${small[@]}" --dir new/a --checkpoint-dir new/b
[ -d "$work/run/new/b" ] && [ -f "$work/run/new/a/saved_models/keras_cifar10_trained_model.h5" ]

# Data: a copy with data_batch_3.bin cut on a record boundary, with and without SHA256SUMS.
mkdir "$work/data"
cp "$data"/*.bin "$data/SHA256SUMS" "$work/data/"
expect 0 "Test accuracy" "$bin" --data "$work/data" "${small[@]}"
truncate -s $((900 * 3073)) "$work/data/data_batch_3.bin"
expect 1 "data_batch_3.bin: SHA-256 " "$bin" --data "$work/data" "${small[@]}"
grep -F "SHA256SUMS says" "$work/out" >/dev/null
rm "$work/data/SHA256SUMS"
expect 1 "data_batch_3.bin: 900 records, data_batch_1.bin has 1017 (truncated file?)" \
    "$bin" --data "$work/data" "${small[@]}"

# A diverging run: stopped at the step where the loss stops being finite, exit 4, no checkpoint of it; its
# --log-json is JSON to a strict reader (no NaN or Infinity), the stopping step's loss null and named.
expect 4 "the loss is" "$bin" --data "$data" "${small[@]}" --limit-train 640 --lr 1e30 \
    --log-json "$work/nan.json" --log-every 1
grep -Eq 'cifar-train: epoch 1, step [0-9]+/20: the loss is -?(nan|inf)' "$work/out" ||
    { echo "FAIL: the message does not name the epoch and step"; cat "$work/out"; exit 1; }
! ls "$work/run"/checkpoint-*.h5 2>/dev/null || { echo "FAIL: a checkpoint was written"; exit 1; }
/usr/bin/python3 - "$work/nan.json" "$(grep -Eo 'step [0-9]+/20: the loss is' "$work/out" | grep -Eo '[0-9]+' | head -n 1)" <<'PY' ||
import json, sys
def strict(word):
    raise ValueError("not JSON: " + word)
lines = [json.loads(l, parse_constant=strict) for l in open(sys.argv[1])]
last = lines[-1]
assert last["step"] == int(sys.argv[2]), ("the last line is not the stopping step", last, sys.argv[2])
assert last["loss"] is None and last["non_finite"]["loss"] in ("nan", "inf", "-inf"), last
assert all(l["loss"] is not None and "non_finite" not in l for l in lines[:-1]), lines[:-1]
print("log.json: %d lines, JSON; step %d: %s" % (len(lines), last["step"], last["non_finite"]))
PY
    { echo "FAIL: the NaN run's --log-json"; cat "$work/nan.json"; exit 1; }

# Checkpoints: a good one, then damaged copies. A stale temporary of a dead writer is removed at start.
mkdir "$work/ck"
host=$(hostname | tr './' '__')
touch "$work/ck/.checkpoint-1.h5.tmp.$host.4194304.AbCdEf"
expect 0 "Removed 1 stale temporary file in $work/ck" "$bin" --data "$data" "${small[@]}" --checkpoint-dir "$work/ck"
! compgen -G "$work/ck/.*.tmp.*" >/dev/null || { echo "FAIL: temporary left"; ls -A "$work/ck"; exit 1; }
good=$work/ck/checkpoint-1.h5
cp "$good" "$work/nan.h5" && /usr/bin/python3 "$h5" damage "$work/nan.h5" nan
cp "$good" "$work/flip.h5" && /usr/bin/python3 "$h5" damage "$work/flip.h5" flip
expect 1 "kernel:0: non-finite value nan at index 0" "$bin" --data "$data" "${small[@]}" --epochs 2 --resume "$work/nan.h5"
expect 1 "kernel:0: non-finite value nan at index 0" "$bin" evaluate "$work/nan.h5" --data "$data" --limit-test 32
expect 1 "weights_sha256" "$bin" --data "$data" "${small[@]}" --epochs 2 --resume "$work/flip.h5"
grep -qF "damaged after it was written" "$work/out"
expect 1 "weights_sha256" "$bin" evaluate "$work/flip.h5" --data "$data" --limit-test 32

# Resuming with another thread count, world size or batch size: said, with what will differ.
expect 0 "written at 1 threads per process, this run uses 2" \
    "$bin" --data "$data" "${small[@]}" --epochs 2 --threads 2 --resume "$good"
cp "$good" "$work/ws2.h5"
/usr/bin/python3 -c 'import h5py, sys; h5py.File(sys.argv[1], "r+")["batchai_training_state"].attrs["world_size"] = 2' \
    "$work/ws2.h5"
expect 0 "was written by 2 processes, this run has 1" "$bin" --data "$data" "${small[@]}" --epochs 2 --resume "$work/ws2.h5"
cp "$good" "$work/mid.h5"
/usr/bin/python3 -c 'import h5py, sys
s = h5py.File(sys.argv[1], "r+")["batchai_training_state"].attrs
s["step"], s["epoch"] = 1, 0' "$work/mid.h5"
expect 1 "stopped in epoch 1 after step 1 of batches of 32: resume it with --batch-size 32" \
    "$bin" --data "$data" "${small[@]}" --epochs 2 --batch-size 16 --resume "$work/mid.h5"
echo "all faults refused or handled as documented"
