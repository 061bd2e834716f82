#!/usr/bin/env bash
# Fuzz the job-file parser for FUZZ_SECONDS (default 20 in make check; `make fuzz` runs 600), starting from
# every job file the project knows, job.json and Azure ML YAML. Fails on any crash, leak or sanitizer report.
# run-tests: parallel
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/jobfile/jobfile-env.sh
fuzzer=$BUILD/fuzz/fuzz_job
[ -z "${BATCHAI_JOB_MISSING:-}" ] || need_built "$fuzzer"
if [ ! -x "$fuzzer" ]; then
    echo "SKIP(dep): $fuzzer not built (needs clang with libFuzzer)"
    exit 77
fi
shared=${SHARED_DIR:-../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
for f in tests/jobfiles/valid/*.json tests/jobfiles/invalid/*.json contrib/*/job.json \
         "$shared"/reference/batchai/recipes/*.json tests/jobfiles/azureml/*.yml "$shared"/reference/azureml/jobs/*.y*ml \
         tests/jobfile/pipelines/*.yml "$shared"/reference/azureml/pipelines/basics/*/*.yml \
         "$shared"/reference/azureml/sweeps/*.yml; do
    [ -f "$f" ] && cp "$f" "$work/corpus/$(echo "$f" | tr '/' '_')"
done
seconds=${FUZZ_SECONDS:-20}
echo "fuzzing bai_job_parse/bai_translate/bai_render_script, bai_pipeline_parse and bai_sweep_parse for ${seconds}s from $(ls "$work/corpus" | wc -l) seeds"
"$fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=5 -rss_limit_mb=2048 \
    -artifact_prefix="$work/" -print_final_stats=1 "$work/corpus" 2>&1 | tail -n 25
