#!/bin/sh
# One full training step of the trainer, and inference, against the numpy reference in test_step.py (1e-4
# relative), twice: with everything this CPU has, then with oneDNN held to AVX2, where oneDNN has no
# Winograd and the forward and input-gradient passes of conv2d_2..4 run our own (cpu_wino.h) on a CPU with
# AVX-512 too (DNNL_MAX_CPU_ISA takes effect at the first oneDNN call, hence one process each).
# run-tests: parallel
set -e
BUILD=${BUILD:-build}
[ -x "$BUILD/tests/trainer/step_dump" ] || { echo "SKIP(dep): the trainer is not built (make config says what it lacks)"; exit 77; }
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "SKIP(dep): Debian's python3-numpy is not installed"; exit 77; }
dump=$(mktemp "${TMPDIR:-/tmp}/step-dump.XXXXXX")
trap 'rm -f "$dump"' EXIT
for isa in ALL AVX2; do
    echo "== DNNL_MAX_CPU_ISA=$isa"
    DNNL_MAX_CPU_ISA=$isa "$BUILD/tests/trainer/step_dump" "$dump"
    /usr/bin/python3 tests/trainer/test_step.py "$dump"
done
