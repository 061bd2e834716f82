#!/usr/bin/env bash
# A step started in a running Batch AI job without the option (srun --jobid=J --overlap, as batchai-job exec
# does) gets the job's environment on its node, as every step of the job does: AZ_BATCHAI_* with that node's
# job temp, and the plugin's mark that the node was prepared. A step of a job that is not a Batch AI job gets
# none of it and runs as before. The job's --batchai-name and --batchai-share hold in that step too: it
# loads the job file as the prolog did.
. "$(dirname "$0")/lib.sh"
cluster_start
install -d -o "$TEST_USER" -m 0755 "$WORK/mine"
echo theirs >"$WORK/mine/data"
write_job wait.json <<JSON
{"properties": {"nodeCount": 2, $LOGS_JSON,
  "mountVolumes": {"azureFileShares": [
    {"azureFileUrl": "https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/myshare", "relativeMountPath": "myshare"},
    {"azureFileUrl": "https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/mine", "relativeMountPath": "mine"}]},
  "environmentVariables": [{"name": "GREETING", "value": "two words"}],
  "customMpiSettings": {"commandLine": "while [ ! -e $WORK/go ]; do sleep 0.1; done", "processCount": 2}}}
JSON
id=$(submit --batchai-job=wait.json --batchai-name=named --batchai-share=mine=$WORK/mine)
for i in $(seq 300); do [ "$(job_field "$id" JobState)" = RUNNING ] && break; sleep 0.1; done
[ "$(job_field "$id" JobState)" = RUNNING ] || fail "job $id is not running: $(job_field "$id" JobState)"
step="echo \"count=\$(env | grep -c ^AZ_BATCHAI_) temp=\$AZ_BATCHAI_JOB_TEMP prepared=\$BATCHAI_NODE_PREPARED greeting=\$GREETING name=\$AZ_BATCHAI_JOB_NAME\" \$(cat \$AZ_BATCHAI_JOB_MOUNT_ROOT/mine/data 2>/dev/null)"
out=$(as_user "timeout 60 srun --jobid=$id --overlap -w n2 -N1 -n1 sh -c '$step'" </dev/null 2>&1) ||
    fail "srun --overlap into job $id failed: $out"
grep -q "^count=[1-9][0-9]* temp=$CL/scratch/batchai/$id.n2 prepared=$id:n2 greeting=two words name=named theirs$" <<<"$out" ||
    fail "the overlapping step on n2 of Batch AI job $id lacks the job's environment: $out"
touch "$WORK/go"
[ "$(wait_job "$id")" = COMPLETED ] || fail "job $id failed: $(cat "$(log_dir "$id" named)/stderr.txt")"

# A plain job: its steps get nothing of the plugin's and still run.
out=$(as_user "sbatch --parsable -N2 -o /dev/null --wrap 'while [ ! -e $WORK/go2 ]; do sleep 0.1; done'" </dev/null 2>&1) ||
    fail "sbatch --wrap failed: $out"
plain=${out%%;*}
for i in $(seq 300); do [ "$(job_field "$plain" JobState)" = RUNNING ] && break; sleep 0.1; done
out=$(as_user "timeout 60 srun --jobid=$plain --overlap -w n2 -N1 -n1 sh -c '$step'" </dev/null 2>&1) ||
    fail "srun --overlap into plain job $plain failed: $out"
grep -q "^count=0 temp= prepared= greeting= name=$" <<<"$out" || fail "a step of plain job $plain got the plugin's environment: $out"
touch "$WORK/go2"
[ "$(wait_job "$plain")" = COMPLETED ] || fail "plain job $plain failed"
assert_nodes_idle
pass "srun --jobid --overlap into a Batch AI job gets its environment, name and share maps on n2; into a plain job, none"
