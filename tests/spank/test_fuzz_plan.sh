#!/usr/bin/env bash
# Fuzz the plan's wire reader for FUZZ_SECONDS (default 5), from plans of the test build's helper over the
# project's valid job files. Fails on any crash, leak, sanitizer report or changed round trip.
# run-tests: parallel
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
fuzzer=$BUILD/fuzz/fuzz_plan_wire
helper=$BUILD/lib/batchai-plan
for p in "$fuzzer" "$helper"; do
    [ -x "$p" ] || { echo "SKIP(dep): $p not built (the fuzzer needs clang with libFuzzer; the helper libseccomp-free is fine)"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
i=0
for f in tests/jobfiles/valid/*.json; do
    i=$((i + 1))
    "$helper" "$i" 1000 "/w/$(basename "$f")" "" "" "" "" -- job_root=/jobs shares_root=/shares <"$f" \
        >"$work/corpus/$i" 2>/dev/null || rm -f "$work/corpus/$i"
done
[ "$(ls "$work/corpus" | wc -l)" -gt 0 ] || { echo "FAIL: the helper made no plan to start from"; exit 1; }
seconds=${FUZZ_SECONDS:-5}
echo "fuzzing bai_wire_plan_read for ${seconds}s from $(ls "$work/corpus" | wc -l) plans"
"$fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=5 -rss_limit_mb=2048 \
    -artifact_prefix="$work/" -print_final_stats=1 "$work/corpus" 2>&1 | tail -n 8
