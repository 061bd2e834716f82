#!/bin/bash
# A stream of stop signals while cifar-train computes never corrupts it: each run stops after its first step
# (exit 3, "SIGUSR1: stopping after epoch 1, step 1/N", checkpoint-1-step-1.h5) whatever instruction the
# signals interrupt. oneDNN's JIT sgemm runs with its stack pointer moved into a heap buffer, so a handler run
# on the compute thread wrote its signal frame over malloc's chunk headers: before the stop signals were
# blocked in the compute threads (train_catch_signals), 3 of 6 such runs died of "corrupted size vs.
# prev_size" (test_signal.sh's single SIGUSR1 hit the window in about 1 of 12 of its 2-rank runs).
# Batches of 256 make the first step, the window the signals have, about a second long.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-signal-storm.XXXXXX")
spammer=""
trap '[ -z "$spammer" ] || kill "$spammer" 2>/dev/null; rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
RUNS=${RUNS:-4}

for i in $(seq "$RUNS"); do
    dir=$work/$i
    mkdir "$dir"
    (cd "$dir" && exec "$bin" --device cpu --data "$data" --limit-train 2560 --limit-test 64 --threads 1 --seed 5 \
        --epochs 2 --batch-size 256) >"$dir/log" 2>&1 &
    pid=$!
    for _ in $(seq 1000); do grep -q '^Epoch 1/' "$dir/log" 2>/dev/null && break; sleep 0.01; done
    # SIGUSR1 as fast as Python sends it until the process is gone (reaped by the wait below).
    /usr/bin/python3 -c '
import os, sys
try:
    while True:
        os.kill(int(sys.argv[1]), 10)
except ProcessLookupError:
    pass' "$pid" &
    spammer=$!
    rc=0
    wait "$pid" || rc=$?
    wait "$spammer" || true
    spammer=""
    [ "$rc" = 3 ] || { echo "FAIL: run $i: exit status $rc under a stream of SIGUSR1, expected 3"; cat "$dir/log"; exit 1; }
    grep -Eq '^SIGUSR1: stopping after epoch 1, step 1/10$' "$dir/log" ||
        { echo "FAIL: run $i: no stop after step 1"; cat "$dir/log"; exit 1; }
    [ -f "$dir/checkpoint-1-step-1.h5" ] || { echo "FAIL: run $i: no checkpoint-1-step-1.h5"; ls "$dir"; exit 1; }
done
echo "$RUNS runs under a stream of SIGUSR1: each stopped after step 1 with its checkpoint"
