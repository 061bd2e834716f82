#!/usr/bin/env bash
# Benchmark: validating the tutorial's job file (target: well under 10 ms), in-process and as a command; then
# `batchai-job validate` on each hostile file of about 1 MiB that tests/jobfile/gen_hostile.c writes (target:
# under 50 ms whatever the file holds), and `batchai-job translate` on each hostile Azure ML YAML file (the same
# target, the read, the translation and the script included), timed by hyperfine.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
job=${SHARED_DIR:-../shared}/reference/batchai/recipes/tutorial-cifar-horovod.job.json
"$BUILD/bench/bench_validate" "$job" 2000
start=$(date +%s%N)
# --no-host: the tutorial's share and image are not this machine's, and validate answers for this site.
for _ in $(seq 100); do "$BUILD/bin/batchai-job" --no-host validate "$job" >/dev/null; done
echo "batchai-job --no-host validate (whole process, 100 runs): $(( ($(date +%s%N) - start) / 100000 ))0 us per run"

if ! command -v hyperfine >/dev/null; then
    echo "hostile files: skipped, hyperfine is not installed (contrib/install-deps.sh bench)"
    exit 0
fi
hostile=$(mktemp -d)
trap 'rm -rf "$hostile"' EXIT
"$BUILD/tests/gen_hostile" "$hostile"
runs=${HOSTILE_RUNS:-20}
echo "hostile files: $BUILD/bin/batchai-job validate FILE, whole process, mean of $runs runs after 2 warm-up" \
     "runs (hyperfine $(hyperfine --version | cut -d' ' -f2) -N), on $(grep -m1 '^model name' /proc/cpuinfo |
     cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
for f in "$hostile"/valid/*.json "$hostile"/invalid/*.json "$hostile"/valid/*.yml "$hostile"/invalid/*.yml; do
    cmd=validate
    case $f in *.yml) cmd=translate ;; esac
    hyperfine -N --ignore-failure --warmup 2 --runs "$runs" --export-csv "$hostile/t.csv" \
        "$BUILD/bin/batchai-job $cmd $f" >/dev/null 2>&1
    # CSV columns: command,mean,stddev,median,user,system,min,max (seconds).
    awk -F, -v name="$cmd $(basename "$(dirname "$f")")/$(basename "$f")" 'NR == 2 {
        printf "  %-45s %8.2f ms  +- %6.2f  (min %.2f, max %.2f)\n", name, $2 * 1e3, $3 * 1e3, $7 * 1e3, $8 * 1e3
    }' "$hostile/t.csv"
done
