#!/usr/bin/env bash
# make bench: the submit overhead the plugin adds to sbatch. On a throwaway cluster with the plugin loaded,
# as an unprivileged user, compare
#   A: sbatch --test-only --batchai-job=job.json        (plugin reads, validates, translates, renders)
#   B: sbatch --test-only job.sh                          (the same script, rendered beforehand)
# --test-only asks slurmctld for a placement without queueing, so both make the same controller round
# trip. The overhead is mean(A) - mean(B), measured with hyperfine (or a plain loop where it is missing).
. "$(dirname "$0")/../../tests/cluster/lib.sh"
BJ=$BUILD/bin/batchai-job
cluster_start
write_job job.json <<JSON
{"properties": {"nodeCount": 2,
  "customMpiSettings": {"commandLine": "cifar-train --epochs=1", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "jobPreparation": {"commandLine": "mkdir -p \$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/out"},
  "environmentVariables": [{"name": "A", "value": "1"}],
  "constraints": {"maxWallClockTime": "0.02:00:00"}}}
JSON
"$BJ" -o "shares_root=$CL/shares" -o "job_root=$CL/jobs" translate "$WORK/job.json" >"$WORK/job.sh"
chown "$TEST_USER:" "$WORK/job.sh"
runs=${BENCH_RUNS:-100}
if command -v hyperfine >/dev/null; then
    as_user "hyperfine -N --warmup 10 --runs $runs --export-json bench.json \
        'sbatch --test-only --batchai-job=job.json' 'sbatch --test-only job.sh'" >/dev/null 2>&1 ||
        fail "hyperfine failed"
    read -r a b < <(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(r[0]["mean"]*1e3, r[1]["mean"]*1e3)' "$WORK/bench.json")
    how="hyperfine -N, $runs runs after 10 warmups, mean"
else
    t() { local s e; s=$(date +%s%N); for ((i = 0; i < runs; i++)); do as_user "$1" >/dev/null 2>&1; done; e=$(date +%s%N); echo "scale=3; ($e - $s) / $runs / 1000000" | bc; }
    a=$(t "sbatch --test-only --batchai-job=job.json"); b=$(t "sbatch --test-only job.sh")
    how="shell loop of $runs runs (includes runuser), mean"
fi
printf 'sbatch --test-only --batchai-job=job.json  %8.2f ms\n' "$a"
printf 'sbatch --test-only job.sh (same script)    %8.2f ms\n' "$b"
printf 'plugin submit overhead                     %8.2f ms   (target < 20 ms; %s)\n' \
    "$(echo "$a - $b" | bc -l)" "$how"
