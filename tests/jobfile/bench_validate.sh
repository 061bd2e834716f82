#!/usr/bin/env bash
# Benchmark: validating the tutorial's job file (target: well under 10 ms), in-process and as a command.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
job=${SHARED_DIR:-../shared}/reference/batchai/recipes/tutorial-cifar-horovod.job.json
"$BUILD/bench/bench_validate" "$job" 2000
start=$(date +%s%N)
for _ in $(seq 100); do "$BUILD/bin/batchai-job" validate "$job" >/dev/null; done
echo "batchai-job validate (whole process, 100 runs): $(( ($(date +%s%N) - start) / 100000 ))0 us per run"
