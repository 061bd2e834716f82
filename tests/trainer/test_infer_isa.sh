#!/bin/sh
# The CPU's forward and backward passes on each instruction set oneDNN has kernels for, as CPUs without
# AVX-512 run them: test_infer (the inference engine, or where the row-by-row pass has our AVX2 Winograd,
# the engine's standing aside) and step_dump (a training step and inference, row by row), with oneDNN held
# to SSE4.1, AVX2 and then everything this CPU has (DNNL_MAX_CPU_ISA takes effect only at the first oneDNN
# call, hence one process each). Each must pass, and no convolution or pooling may run oneDNN's reference
# implementation (ONEDNN_VERBOSE names the one that ran): asked for a layout that no fast kernel takes,
# oneDNN falls back to it, 100x slower, which the engine once did on AVX2.
# The numbers: step_dump's on SSE4.1 and AVX2 against its run with everything (test_step.py --against):
# the same inputs bit for bit, and the loss, every gradient, the update and the inference losses within
# 1e-4 relative, the tolerance each is held to against numpy (test_step.sh). They are not bit-identical:
# oneDNN's kernels for each instruction set sum in their own order.
# run-tests: parallel
set -e
BUILD=${BUILD:-build}
[ -x "$BUILD/tests/trainer/test_infer" ] && [ -x "$BUILD/tests/trainer/step_dump" ] || { echo "SKIP(dep): the trainer is not built (make config says what it lacks)"; exit 77; }
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "SKIP(dep): Debian's python3-numpy is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/infer-isa.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
for isa in ALL SSE41 AVX2; do
    dump=$tmp/step-$isa.bin
    echo "== DNNL_MAX_CPU_ISA=$isa"
    DNNL_MAX_CPU_ISA=$isa ONEDNN_VERBOSE=1 "$BUILD/tests/trainer/test_infer" >"$log"
    DNNL_MAX_CPU_ISA=$isa ONEDNN_VERBOSE=1 "$BUILD/tests/trainer/step_dump" "$dump" >>"$log"
    grep -v '^onednn_verbose' "$log"
    grep '^onednn_verbose,exec,cpu,\(convolution\|pooling\)' "$log" | cut -d, -f5 | sort | uniq -c
    if grep -q '^onednn_verbose,exec,cpu,\(convolution\|pooling[a-z_0-9]*\),ref' "$log"; then
        echo "FAIL: a reference implementation ran:"
        grep '^onednn_verbose,exec,cpu,\(convolution\|pooling[a-z_0-9]*\),ref' "$log" | sort -u | head -5
        exit 1
    fi
    if [ $isa != ALL ]; then
        echo "== step_dump on $isa against ALL"
        /usr/bin/python3 tests/trainer/test_step.py --against "$tmp/step-ALL.bin" "$dump"
    fi
done
