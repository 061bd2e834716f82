#!/bin/bash
# --csv and --tensorboard across stops and resumes stay one continuous record:
#  - SIGTERM in epoch 2, then --resume auto: one CSV row per epoch 0..2, none twice; a second event file
#    whose steps continue the first's (a SessionLog START at the resumed step); epoch 2's row is whole: its
#    acc, loss, val_acc and val_loss are the uninterrupted run's (the checkpoint carries the epoch's running
#    sums), to the rounding of their order of addition; the PNG, whose drawing a signal killed, is drawn at the stop;
#  - a run killed after an epoch's row but before its checkpoint (checkpoint-3.h5 removed, a half-written
#    row appended) and resumed from checkpoint-2.h5: the stale rows are cut, epoch 2 is written again
#    once, and TensorBoard drops the first run's step 2 at the new file's START;
#  - a --csv file of another kind is refused and left as it was.
# Every file is read back by watch_check.py against --log-json.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
need_python google.protobuf crc32c
command -v protoc >/dev/null || { echo "SKIP(dep): protoc is not installed (Debian: protobuf-compiler)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-watch-resume.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
check=$(pwd)/tests/trainer/watch_check.py
common=(--device cpu --data "$data" --limit-train 1280 --limit-test 64 --threads 2 --seed 5 --csv training.csv
        --tensorboard tb --log-json log.json --resume auto)
d=$work/run
mkdir "$d"

# The first drawing dies of a signal, as under Slurm, whose SIGTERM reaches every process of a step: the stop
# draws the last row again, so the stopped run has its PNG.
real_gnuplot=$(command -v gnuplot) || { echo "SKIP(dep): gnuplot is not installed (Debian: gnuplot-nox)"; exit 77; }
mkdir "$work/fakebin"
printf '#!/bin/sh\nif mkdir "%s/killed" 2>/dev/null; then kill -TERM $$; fi\nexec "%s" "$@"\n' "$work" "$real_gnuplot" \
    >"$work/fakebin/gnuplot"
chmod +x "$work/fakebin/gnuplot"
PATH=$work/fakebin:$PATH sigterm_in_epoch_2 "$d" "$bin" "${common[@]}" --epochs 3
grep '^SIGTERM: stopping after epoch 2' "$d/log" || { echo "FAIL: not stopped in epoch 2"; cat "$d/log"; exit 1; }
[ -d "$work/killed" ] && [ -s "$d/training.png" ] ||
    { echo "FAIL: no training.png after the stop (its first drawing was killed)"; cat "$d/log"; exit 1; }
(cd "$d" && "$bin" "${common[@]}" --epochs 3 >log2 2>&1) || { cat "$d/log2"; exit 1; }
grep '^Resuming from ./checkpoint-2' "$d/log2" || { echo "FAIL: not resumed in epoch 2"; cat "$d/log2"; exit 1; }
(cd "$d" && /usr/bin/python3 "$check" --json log.json --csv training.csv --tb tb --tb-files 2 --epochs 3)
mkdir "$work/whole"
(cd "$work/whole" && "$bin" "${common[@]}" --epochs 3 >log 2>&1) || { cat "$work/whole/log"; exit 1; }
/usr/bin/python3 - "$work/whole/training.csv" "$d/training.csv" <<'PY' || exit 1
import csv, sys
whole, resumed = (list(csv.DictReader(open(f))) for f in sys.argv[1:])
for key in ("acc", "loss", "val_acc", "val_loss"):
    a, b = float(whole[1][key]), float(resumed[1][key])
    if abs(a - b) > 1e-6 * max(1.0, abs(a)):
        sys.exit("FAIL: epoch 2's %s after the resume is %r, the uninterrupted run's %r" % (key, b, a))
print("epoch 2's row after the resume:", dict(resumed[1]))
PY

# Killed between epoch 3's row and its checkpoint, the row cut short by the kill on top.
rm "$d/checkpoint-3.h5"
printf '3,0.12' >>"$d/training.csv"
(cd "$d" && "$bin" "${common[@]}" --epochs 4 >log3 2>&1) || { cat "$d/log3"; exit 1; }
grep '^Resuming from ./checkpoint-2.h5' "$d/log3" || { echo "FAIL: not resumed from checkpoint-2.h5"; cat "$d/log3"; exit 1; }
(cd "$d" && /usr/bin/python3 "$check" --json log.json --csv training.csv --tb tb --tb-files 3 --epochs 4)

# Another program's CSV: refused before training, untouched.
printf 'time,value\r\n1,2\r\n' >"$work/other.csv"
cp "$work/other.csv" "$work/other.orig"
rc=0
(cd "$d" && "$bin" "${common[@]}" --epochs 5 --csv "$work/other.csv" >log4 2>&1) || rc=$?
[ "$rc" = 1 ] || { echo "FAIL: exit status $rc with a foreign CSV, expected 1"; cat "$d/log4"; exit 1; }
grep -q "not a cifar-train CSV log" "$d/log4" || { echo "FAIL: no clear error"; cat "$d/log4"; exit 1; }
cmp "$work/other.csv" "$work/other.orig" || { echo "FAIL: the foreign CSV was changed"; exit 1; }
! grep -q '^Epoch' "$d/log4" || { echo "FAIL: it trained anyway"; exit 1; }
echo "ok: one continuous CSV and continuing TensorBoard steps across SIGTERM, a lost checkpoint and resumes"
