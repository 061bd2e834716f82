#!/bin/bash
# A full disk while a checkpoint is written: a 16 MiB tmpfs as --checkpoint-dir holds checkpoint-1.h5
# (about 10 MB) but not the temporary file of checkpoint-2.h5 beside it. cifar-train must say "No space
# left on device" naming the file, exit 1 (not die by a signal in HDF5's shutdown, as it once did with
# status 139), leave no temporary file, and keep checkpoint-1.h5 whole (evaluate and --resume read it,
# checksums included). The final model on a full disk is checked the same way.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
[ "$(id -u)" -eq 0 ] || { echo "SKIP(root): mounting a small tmpfs needs root"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-full.XXXXXX")
mkdir "$work/full"
mount -t tmpfs -o size=16m tmpfs "$work/full" || { echo "SKIP(root): cannot mount a tmpfs here"; rm -rf "$work"; exit 77; }
trap 'umount "$work/full"; rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
small=(--device cpu --data "$data" --limit-train 64 --limit-test 32 --threads 1)

# check_full RC LOG FILE: the run ended with status 1 and the ENOSPC message naming FILE.
check_full() {
    [ "$1" = 1 ] || { echo "FAIL: exit status $1 on a full disk, expected 1"; cat "$2"; exit 1; }
    grep -F "cifar-train: $3: cannot write: No space left on device" "$2" ||
        { echo "FAIL: no 'No space left on device' message naming $3"; cat "$2"; exit 1; }
    ! compgen -G "$work/full/.*.tmp.*" >/dev/null || { echo "FAIL: temporary file left"; ls -A "$work/full"; exit 1; }
}

rc=0
(cd "$work" && "$bin" "${small[@]}" --epochs 3 --checkpoint-dir full >log 2>&1) || rc=$?
check_full "$rc" "$work/log" full/checkpoint-2.h5
[ "$(ls "$work/full")" = checkpoint-1.h5 ] || { echo "FAIL: expected only checkpoint-1.h5"; ls -la "$work/full"; exit 1; }
"$bin" evaluate "$work/full/checkpoint-1.h5" --data "$data" --limit-test 32 | grep '^Test loss'

# The final model: checkpoints elsewhere, --dir on the full tmpfs after a filler takes the room.
rm "$work/full/checkpoint-1.h5"
head -c $((12 * 1024 * 1024)) /dev/zero >"$work/full/filler"
rc=0
(cd "$work" && "$bin" "${small[@]}" --epochs 1 --dir full >log2 2>&1) || rc=$?
check_full "$rc" "$work/log2" full/saved_models/keras_cifar10_trained_model.h5
[ -s "$work/checkpoint-1.h5" ] && "$bin" evaluate "$work/checkpoint-1.h5" --data "$data" --limit-test 32 >/dev/null

# --csv and --tensorboard on a disk that fills up mid-run: each writer says so once, naming the epoch, and
# stops; training goes on to exit 0; what is written stays whole (the event file's records all read back,
# the CSV's rows all complete). A 2-page tmpfs: a page for each file, and the event file outgrows its
# page first (about 30 epochs).
umount "$work/full"
mount -t tmpfs -o size=8k tmpfs "$work/full"
rm -f "$work"/checkpoint-*.h5
rc=0
(cd "$work" && "$bin" "${small[@]}" --limit-train 32 --batch-size 32 --epochs 40 --keep-checkpoints 1 \
    --csv full/t.csv --tensorboard full/tb --log-json log.json >log3 2>&1) || rc=$?
[ "$rc" = 0 ] || { echo "FAIL: exit status $rc when the event file's disk filled, expected 0"; cat "$work/log3"; exit 1; }
grep 'warning: --tensorboard: .*No space left on device: no more events are written to it (from epoch' "$work/log3" ||
    { echo "FAIL: no warning for the full event file"; cat "$work/log3"; exit 1; }
stopped=$(sed -n 's/.*--tensorboard: .*(from epoch \([0-9]*\))$/\1/p' "$work/log3")
[ "$(grep -c 'warning: --tensorboard' "$work/log3")" = 1 ] || { echo "FAIL: the warning came more than once"; exit 1; }
if /usr/bin/python3 -c 'import google.protobuf, crc32c' 2>/dev/null && command -v protoc >/dev/null; then
    /usr/bin/python3 tests/trainer/watch_check.py --json "$work/log.json" --tb "$work/full/tb" --epochs $((stopped - 1))
fi
# The CSV: a row per epoch up to where it too met the full disk (said then), each row whole.
rows=$(($(wc -l <"$work/full/t.csv") - 1))
[ "$rows" -ge $((stopped - 1)) ] && [ -z "$(tail -c 2 "$work/full/t.csv" | tr -d '\r\n')" ] ||
    { echo "FAIL: the CSV has $rows rows or a cut one"; tail -c 200 "$work/full/t.csv"; exit 1; }
[ "$rows" = 40 ] || grep -q "warning: --csv: .*No space left on device" "$work/log3" ||
    { echo "FAIL: the CSV stopped at $rows rows without a warning"; exit 1; }
echo "full disk: said and survived"
