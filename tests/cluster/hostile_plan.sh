#!/usr/bin/env bash
# The prolog's parser child misbehaves, as a parser bug reached by a crafted job file could make it: the plugin
# built for the tests plants each fault when the job file holds BATCHAI_PLAN_FAULT=<fault> (batchai-plan
# built with BAI_PLAN_FAULTS; the installed one has no such switch). Each job fails, closed, with the reason
# in its stderr.txt and in `batchai-job status`; its command never runs; no node is drained.
#   crash     the child dies of SIGSEGV
#   loop      it never ends: its CPU limit (or the deadline) ends it
#   flood     it writes 100 MiB: root reads at most the plan's limit, and kills it
#   outside   its plan maps the share to /etc
#   escape    its plan puts a mount point at job_root itself, outside the job's mounts
#   otherjob  its plan is for another job id
#   probe     it reports what it is: the user's uid (real, effective, saved), no new privileges, descriptors
#             0-2 only, and an open(2) refused by its seccomp filter
. "$(dirname "$0")/lib.sh"
cluster_start
install -m 0755 "$BUILD/bin/batchai-job" "$CL/batchai-job"

# fault_job NAME: a 1-node job whose command would leave ran-<id> in the share, with the fault's switch.
fault_job() {
    write_job "$1.json" <<JSON
{"properties": {"nodeCount": 1, $LOGS_JSON, $MOUNT_JSON,
  "customToolkitSettings": {"commandLine": "echo BATCHAI_PLAN_FAULT=$1; touch $SHARE/ran-\$SLURM_JOB_ID"}}}
JSON
}

declare -A want=(
    [crash]="it was killed by signal 11"
    [loop]="killed by signal"
    [flood]="it wrote more than 4194304 bytes"
    [outside]="names /etc, which is not where the site maps share myshare"
    [escape]="is not under $CL/jobs/%j/mounts"
    [otherjob]="the job's plan is refused: it is for job"
    [probe]="probe: uids $TEST_UID/$TEST_UID/$TEST_UID, no_new_privs 1, descriptors 3, open(/) Operation not permitted"
)
declare -A ids=()
for f in crash loop flood outside escape otherjob probe; do
    fault_job "$f"
    ids[$f]=$(submit --batchai-job="$f.json")
done
for f in crash loop flood outside escape otherjob probe; do
    id=${ids[$f]}
    st=$(wait_job "$id" 60)
    err=$(cat "$(log_dir "$id" "$f")/stderr.txt" 2>&1)
    [ "$st" = FAILED ] || fail "$f: job $id ended $st, want FAILED: $err"
    [ ! -e "$SHARE/ran-$id" ] || fail "$f: job $id ran its command on a plan that should have been refused"
    case $err in *"${want[$f]}"*) ;; *) fail "$f: job $id's stderr.txt does not say '${want[$f]}': $err" ;; esac
    status=$(as_user "$CL/batchai-job status $id" 2>&1) || true
    case $status in *JobNodeError*"${want[$f]}"*) ;; *) fail "$f: batchai-job status $id does not say '${want[$f]}': $status" ;; esac
done
assert_nodes_idle
pass "a crashing, looping, flooding, escaping or misdirected parser fails only its job, with the reason"
