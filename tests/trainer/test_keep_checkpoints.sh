#!/bin/bash
# Checkpoint retention:
#  - --keep-checkpoints 2 --keep-best over 5 epochs keeps checkpoint-4.h5, checkpoint-5.h5 and the one with
#    the best val_acc (the CSV's, and the best_epoch each checkpoint records); --resume auto then starts
#    from checkpoint-5.h5;
#  - a SIGTERM mid-epoch leaves checkpoint-E-step-S.h5, which goes once the next epoch's checkpoint is
#    complete; without --keep-best only the newest N stay;
#  - under Batch AI (the plugin's AZ_BATCHAI_* set) the defaults: 3 newest and the best, the CSV in
#    $AZ_BATCHAI_STDOUTERR_DIR/training.csv with its PNG, the event files in $AZ_BATCHAI_OUTPUT_TENSORBOARD;
#    --keep-checkpoints 0 there keeps all.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
need_python h5py
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-keep.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
# Seed 3 on this subset peaks in val_acc at epoch 1, so that the best is not among the newest.
common=(--device cpu --data "$data" --limit-train 320 --limit-test 64 --threads 2 --seed 3)

# kept DIR: the checkpoints in DIR, by name, on one line.
kept() { (cd "$1" && shopt -s nullglob && for f in checkpoint-*.h5; do echo "$f"; done | sort -V | tr '\n' ' '); }
# best_of CSV: the epoch (1-based) of the first highest val_acc.
best_of() {
    /usr/bin/python3 -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
print(1 + max(range(len(rows)), key=lambda i: (float(rows[i]["val_acc"]), -i)))' "$1"
}

d=$work/best
mkdir "$d"
(cd "$d" && "$bin" "${common[@]}" --epochs 5 --csv t.csv --keep-checkpoints 2 --keep-best >log 2>&1) ||
    { cat "$d/log"; exit 1; }
best=$(best_of "$d/t.csv")
[ "$best" -lt 4 ] || { echo "FAIL: the best epoch is $best: this test needs one before the newest two"; exit 1; }
[ "$(kept "$d")" = "checkpoint-$best.h5 checkpoint-4.h5 checkpoint-5.h5 " ] ||
    { echo "FAIL: kept $(kept "$d"), expected epochs $best, 4, 5"; exit 1; }
rec=$(/usr/bin/python3 -c 'import h5py, sys
print(int(h5py.File(sys.argv[1], "r")["batchai_training_state"].attrs["best_epoch"]))' "$d/checkpoint-5.h5")
[ "$rec" = "$best" ] || { echo "FAIL: checkpoint-5.h5 records best_epoch $rec, the CSV says $best"; exit 1; }
(cd "$d" && "$bin" "${common[@]}" --epochs 6 --keep-checkpoints 2 --keep-best --resume auto >log2 2>&1) ||
    { cat "$d/log2"; exit 1; }
grep -q '^Resuming from ./checkpoint-5.h5' "$d/log2" || { echo "FAIL: --resume auto did not take the newest"; cat "$d/log2"; exit 1; }
[ "$(kept "$d")" = "checkpoint-$best.h5 checkpoint-5.h5 checkpoint-6.h5 " ] ||
    { echo "FAIL: after the resumed epoch kept $(kept "$d")"; exit 1; }

# A stop mid-epoch: its step checkpoint stays until the next epoch checkpoint is written.
d=$work/step
mkdir "$d"
long=(--device cpu --data "$data" --limit-train 1280 --limit-test 64 --threads 2 --seed 3 --keep-checkpoints 1)
sigterm_in_epoch_2 "$d" "$bin" "${long[@]}" --epochs 3
case "$(kept "$d")" in
"checkpoint-1.h5 checkpoint-2-step-"*".h5 " | "checkpoint-2.h5 ") ;;
*) echo "FAIL: after the stop kept $(kept "$d")"; exit 1 ;;
esac
(cd "$d" && "$bin" "${long[@]}" --epochs 3 --resume auto >log2 2>&1) || { cat "$d/log2"; exit 1; }
[ "$(kept "$d")" = "checkpoint-3.h5 " ] || { echo "FAIL: after the resumed run kept $(kept "$d")"; exit 1; }

# Under Batch AI: the defaults.
d=$work/batchai
mkdir -p "$d/logs"
(cd "$d" && AZ_BATCHAI_JOB_NAME=keep AZ_BATCHAI_STDOUTERR_DIR="$d/logs" AZ_BATCHAI_OUTPUT_TENSORBOARD="$d/out/tb" \
    "$bin" "${common[@]}" --epochs 6 >log 2>&1) || { cat "$d/log"; exit 1; }
best=$(best_of "$d/logs/training.csv")
[ "$(kept "$d")" = "checkpoint-$best.h5 checkpoint-4.h5 checkpoint-5.h5 checkpoint-6.h5 " ] ||
    { echo "FAIL: under Batch AI kept $(kept "$d"), expected epochs $best, 4, 5, 6"; exit 1; }
ls "$d"/out/tb/events.out.tfevents.* >/dev/null || { echo "FAIL: no event file in AZ_BATCHAI_OUTPUT_TENSORBOARD"; exit 1; }
if command -v gnuplot >/dev/null; then
    [ -s "$d/logs/training.png" ] || { echo "FAIL: no PNG beside the CSV"; ls "$d/logs"; exit 1; }
fi
rm "$d"/checkpoint-*.h5
(cd "$d" && AZ_BATCHAI_JOB_NAME=keep "$bin" "${common[@]}" --epochs 5 --keep-checkpoints 0 >log2 2>&1) ||
    { cat "$d/log2"; exit 1; }
[ "$(kept "$d")" = "checkpoint-1.h5 checkpoint-2.h5 checkpoint-3.h5 checkpoint-4.h5 checkpoint-5.h5 " ] ||
    { echo "FAIL: --keep-checkpoints 0 under Batch AI kept $(kept "$d")"; exit 1; }
echo "ok: newest N and the best kept, step checkpoints superseded, Batch AI defaults"
