#!/usr/bin/env bash
# make bench-start: the time the plugin adds to a job's start on N nodes that are separate network hosts
# (BATCHAI_HOSTS=1: tests/cluster/lib.sh re-runs this on the submit host ctl of a contrib/localcluster/hostnet
# set of BATCHAI_HOSTS_NODES nodes, each slurmd with its own network stack, host name, /tmp and /dev/shm).
# As the unprivileged user, alternating, RUNS times each:
#   A: sbatch --batchai-job=job.json   nodeCount N, customMpiSettings processCount N (the plugin validates and
#                                      renders at submission, prepares every node, then the main step)
#   B: sbatch plain.sh                 the same main step, as the plugin renders it (srun --mpi=pmix
#                                      --kill-on-bad-exit=1 --ntasks=N), without the plugin
# Each task of the main step writes the time it started (date +%s.%N; one clock for every host of the
# machine). Measured: from just before sbatch to the start of the last of the N tasks (the main step
# running everywhere), so scheduling is in both; A - B is what the plugin adds. Prints one line
# "start N A_ms B_ms" of medians (make bench-start's table reads it) after the single runs.
. "$(dirname "$0")/../../tests/cluster/lib.sh"
cluster_start
N=$(scontrol -o show nodes | grep -c '^NodeName=')
runs=${RUNS:-5}
install -d -o "$TEST_USER" -m 0755 "$SHARE/t"
write_job job.json <<JSON
{"properties": {"nodeCount": $N,
  "customMpiSettings": {"commandLine": "date +%s.%N >\$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/t/\$AZ_BATCHAI_TASK_INDEX", "processCount": $N},
  $LOGS_JSON, $MOUNT_JSON,
  "constraints": {"maxWallClockTime": "0.00:10:00"}}}
JSON
write_job plain.sh <<SH
#!/bin/sh
#SBATCH --nodes=$N
#SBATCH --ntasks=$N
#SBATCH --time=10
#SBATCH --output=/dev/null
srun --mpi=pmix --kill-on-bad-exit=1 --ntasks=$N /bin/sh -c 'date +%s.%N >$SHARE/t/\$SLURM_PROCID'
SH
# one KIND ARGS...: one job; prints milliseconds from submission to the last task's start.
one() {
    local kind=$1 id t0 st
    shift
    find "$SHARE/t" -mindepth 1 -delete
    t0=$(date +%s.%N)
    id=$(submit "$@")
    st=$(wait_job "$id")
    [ "$st" = COMPLETED ] || fail "$kind job $id ended $st"
    [ "$(find "$SHARE/t" -type f | wc -l)" = "$N" ] || fail "$kind job $id: not every task started"
    cat "$SHARE/t"/* | /usr/bin/python3 -c 'import sys; print("%.0f" % ((max(map(float, sys.stdin)) - float(sys.argv[1])) * 1e3))' "$t0"
}
a=() b=()
one B plain.sh >/dev/null # warm-up: first use of each node
for ((r = 0; r < runs; r++)); do
    a+=("$(one A --batchai-job=job.json)")
    b+=("$(one B plain.sh)")
    echo "N=$N run $((r + 1)): batchai ${a[-1]} ms, plain ${b[-1]} ms; load $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "start $N $(/usr/bin/python3 -c 'import statistics,sys; print(statistics.median(map(int, sys.argv[1].split())))' "${a[*]}") $(/usr/bin/python3 -c 'import statistics,sys; print(statistics.median(map(int, sys.argv[1].split())))' "${b[*]}")"
