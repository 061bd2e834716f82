#!/bin/bash
# What a user watches, each file read by an independent reader (watch_check.py, against --log-json):
# --csv (Python's csv module), --tensorboard (TFRecord CRCs with python3-crc32c, Events with protoc's
# Python code), the PNG gnuplot draws beside the CSV. Then gnuplot missing, failing, and stuck: training
# ends as usual, each said once; a stuck gnuplot is not started again while it runs and is killed, with
# its children, CURVE_PLOT_WAIT seconds on.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
need_python google.protobuf crc32c
command -v protoc >/dev/null || { echo "SKIP(dep): protoc is not installed (Debian: protobuf-compiler)"; exit 77; }
command -v gnuplot >/dev/null || { echo "SKIP(dep): gnuplot is not installed (Debian: gnuplot-nox)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-watch.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
check=$(pwd)/tests/trainer/watch_check.py
common=(--device cpu --data "$data" --limit-train 320 --limit-test 64 --threads 2 --seed 5 --epochs 3
        --csv training.csv --log-json log.json)

mkdir "$work/a"
(cd "$work/a" && "$bin" "${common[@]}" --tensorboard tb >log 2>&1) || { cat "$work/a/log"; exit 1; }
(cd "$work/a" && /usr/bin/python3 "$check" --json log.json --csv training.csv --tb tb --png training.png --epochs 3)
! grep -q 'PNG' "$work/a/log" || { echo "FAIL: the run said something about the PNG"; cat "$work/a/log"; exit 1; }
if compgen -G "$work/a/.training*" >/dev/null; then echo "FAIL: a temporary file of the PNG is left"; ls -A "$work/a"; exit 1; fi

# expect_once DIR TEXT: the run in DIR ended 0, said TEXT exactly once, drew no PNG, wrote the CSV.
expect_once() {
    [ "$rc" = 0 ] || { echo "FAIL: exit status $rc"; cat "$1/log"; exit 1; }
    [ "$(grep -c "$2" "$1/log")" = 1 ] || { echo "FAIL: '$2' not said exactly once"; cat "$1/log"; exit 1; }
    [ ! -e "$1/training.png" ] || { echo "FAIL: a PNG was drawn"; exit 1; }
    [ "$(wc -l <"$1/training.csv")" = 4 ] || { echo "FAIL: the CSV lacks rows"; cat "$1/training.csv"; exit 1; }
}

mkdir "$work/none"
rc=0
(cd "$work/none" && PATH=/nonexistent "$bin" "${common[@]}" >log 2>&1) || rc=$?
expect_once "$work/none" '^No training-curve PNG: gnuplot is not on PATH'

mkdir "$work/failing" "$work/failing/bin"
printf '#!/bin/sh\nexit 3\n' >"$work/failing/bin/gnuplot"
chmod +x "$work/failing/bin/gnuplot"
rc=0
(cd "$work/failing" && PATH="$work/failing/bin:$PATH" "$bin" "${common[@]}" >log 2>&1) || rc=$?
expect_once "$work/failing" '^No training-curve PNG this time: gnuplot failed (exit status 3'

# A gnuplot that never ends and leaves a child of its own: both are killed, none is left.
mkdir "$work/stuck" "$work/stuck/bin"
mark=$((200000 + $$))
printf '#!/bin/sh\necho started >>"%s"\nsleep %s &\nwait\n' "$work/stuck/starts" "$mark" >"$work/stuck/bin/gnuplot"
chmod +x "$work/stuck/bin/gnuplot"
rc=0
(cd "$work/stuck" && PATH="$work/stuck/bin:$PATH" "$bin" "${common[@]}" >log 2>&1) || rc=$?
expect_once "$work/stuck" '^No training-curve PNG this time: gnuplot ran for [0-9]* s: killed$'
[ "$(wc -l <"$work/stuck/starts")" = 1 ] || { echo "FAIL: gnuplot was started again while one ran"; exit 1; }
if pgrep -xf "sleep $mark" >/dev/null; then echo "FAIL: the stuck gnuplot's child is left running"; exit 1; fi
echo "ok: csv, tensorboard and png read back; no gnuplot, a failing and a stuck one each said once"
