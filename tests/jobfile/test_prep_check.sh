#!/usr/bin/env bash
# The generated script's guard between the preparation and the main step, run by bash with srun and
# scontrol replaced by shell functions: when the preparation step ends with status 0 but only one of the
# two nodes logged a successful end for this attempt (the other's slurmd lost mid-step), the script says
# "the job preparation finished on 1 of 2 nodes (attempt 2)", exits 1 and never logs "main step started";
# when both did, the main step runs. Attempt 2 (SLURM_RESTART_COUNT=1) with attempt 1's lines already in
# the logs checks that an earlier attempt's success does not count.
# run-tests: parallel
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/jobfile/jobfile-env.sh
bin=$BUILD/san/bin/batchai-job
need_built "$bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/job.json" <<'JSON'
{"properties": {"nodeCount": 2, "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/s/logs",
  "mountVolumes": {"azureFileShares": [{"azureFileUrl": "https://a.file.core.windows.net/s", "relativeMountPath": "s"}]},
  "jobPreparation": {"commandLine": "true"},
  "customToolkitSettings": {"commandLine": "echo main ran"}}}
JSON
mkdir -p "$work/shares/s"
"$bin" -o "shares_root=$work/shares" -n job translate "$work/job.json" >"$work/job.sh" || { echo "FAIL: translate"; exit 1; }
log=$work/shares/s/logs/job/7/stdouterr
# run NODES: the script as attempt 2 where the preparation step runs its wrapper on NODES only.
run() {
    rm -rf "$work/shares/s/logs" && mkdir -p "$log"
    for n in n1 n2; do echo "2026-01-01T00:00:00Z attempt 1: job preparation finished with exit code 0" >"$log/execution-$n.log"; done
    # BATCHAI_NODE_PREPARED: what the plugin sets in every task of a node it prepared (bai_node_check).
    SLURM_JOB_ID=7 SLURM_RESTART_COUNT=1 SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST='n[1-2]' SLURMD_NODENAME=n1 \
        BATCHAI_NODE_PREPARED=7:n1 AZ_BATCHAI_MPI_HOST_FILE=$work/hosts PREP_NODES=$1 bash -c '
        srun() { while [ "${1#--}" != "$1" ]; do shift; done
                 if [ "$1" = /bin/sh ] && [ "${3#*job preparation}" != "$3" ]; then
                     for n in $PREP_NODES; do SLURMD_NODENAME=$n BATCHAI_NODE_PREPARED=7:$n "$@" || return; done
                 else "$@"; fi; }
        scontrol() { [ "$1" = show ] && [ "$2" = hostnames ] && printf "n1\nn2\n"; }
        . "$0"' "$work/job.sh" >"$work/out" 2>"$work/err"
}
run n1
rc=$?
[ "$rc" = 1 ] || { echo "FAIL: exit $rc with one node prepared"; cat "$work/out" "$work/err"; exit 1; }
grep -qx "batchai: the job preparation finished on 1 of 2 nodes (attempt 2): the main step is not started" "$work/err" ||
    { echo "FAIL: no message"; cat "$work/err"; exit 1; }
if grep -q "main step started" "$log"/execution-*.log || grep -q "main ran" "$work/out"; then
    echo "FAIL: the main step started"; exit 1
fi
grep "finished on" "$work/err"
run "n1 n2"
rc=$?
if [ "$rc" != 0 ] || ! grep -qx "main ran" "$work/out" || ! grep -q "attempt 2: main step started" "$log/execution-n1.log"; then
    echo "FAIL: both nodes prepared but the main step did not run (exit $rc)"; cat "$work/out" "$work/err"; exit 1
fi
echo "prepared-node guard: 1 of 2 stops the job before its main step; 2 of 2 runs it"
