#!/bin/bash
# The accuracy benchmarks' programs still run (they are outside `make check` for their length, so nothing else
# would notice a broken one): `make bench-accuracy` for 1 epoch and 1 seed (cifar-train and torch_peer.py
# train), and torch_with_our_draws.py for 1 epoch with all of cifar-train's draws. Each must end with a test
# accuracy above chance. Not a measurement: 1 epoch says nothing about speed or accuracy.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
need_python numpy torch
out=$(mktemp)
trap 'rm -f "$out"' EXIT
above_chance() { # $1: what ran; $2: the accuracies it printed, each must be in (0.15, 1]
    [ -n "$2" ] || { echo "FAIL: $1 printed no test accuracy"; cat "$out"; exit 1; }
    for a in $2; do
        awk -v a="$a" 'BEGIN { exit !(a > 0.15 && a <= 1) }' || { echo "FAIL: $1: test accuracy $a"; cat "$out"; exit 1; }
    done
    echo "ok: $1: test accuracy $(echo "$2" | tr '\n' ' ')"
}
BUILD=$BUILD DATA=$DATA EPOCHS=1 SEEDS=0 THREADS=2 DEVICE=cpu trainer/bench/accuracy-bench.sh >"$out" 2>&1 ||
    { echo "FAIL: accuracy-bench.sh"; cat "$out"; exit 1; }
if ! grep -q '^| 0 ' "$out" || ! grep -q 'PyTorch' "$out"; then
    echo "FAIL: accuracy-bench.sh printed no table"
    cat "$out"
    exit 1
fi
above_chance "make bench-accuracy (1 epoch)" "$(awk '$1 == "ours" || $1 == "torch" { print $3 }' "$out")"
/usr/bin/python3 trainer/bench/torch_with_our_draws.py "$DATA" 1 0 2 >"$out" 2>&1 ||
    { echo "FAIL: torch_with_our_draws.py"; cat "$out"; exit 1; }
above_chance "torch_with_our_draws.py (1 epoch)" "$(sed -n 's/^Test accuracy: //p' "$out")"
