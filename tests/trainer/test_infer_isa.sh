#!/bin/sh
# The CPU's forward and backward passes on each instruction set oneDNN has kernels for, as CPUs without
# AVX-512 run them: test_infer (the inference engine, or where the row-by-row pass has our AVX2 Winograd,
# the engine's standing aside) and step_dump (a training step and inference, row by row), with oneDNN held
# to SSE4.1, AVX2 and then everything this CPU has (DNNL_MAX_CPU_ISA takes effect only at the first oneDNN
# call, hence one process each). Each must pass, and no convolution or pooling may run oneDNN's reference
# implementation (ONEDNN_VERBOSE names the one that ran): asked for a layout that no fast kernel takes,
# oneDNN falls back to it, 100x slower, which the engine once did on AVX2.
set -e
BUILD=${BUILD:-build}
[ -x "$BUILD/tests/trainer/test_infer" ] && [ -x "$BUILD/tests/trainer/step_dump" ] || { echo "SKIP(dep): the trainer is not built (make config says what it lacks)"; exit 77; }
log=$(mktemp "${TMPDIR:-/tmp}/infer-isa.XXXXXX")
dump=$(mktemp "${TMPDIR:-/tmp}/infer-isa-dump.XXXXXX")
trap 'rm -f "$log" "$dump"' EXIT
for isa in SSE41 AVX2 ALL; do
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
done
