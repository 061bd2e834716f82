#!/usr/bin/env bash
# A job with its own script (and one with --wrap): the plugin still prepares the nodes (directories,
# mounts, jobPreparation on every node as the user) and sets the environment; an allocation that
# contradicts nodeCount stops the job with a clear message and leaves the nodes idle. batchai-job status
# knows such a job (its output names its log directory) and says why it stopped.
. "$(dirname "$0")/lib.sh"
cluster_start
write_job s.json <<JSON
{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "true", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "jobPreparation": {"commandLine": "echo prep node=\$SLURMD_NODENAME uid=\$(id -u)"},
  "environmentVariables": [{"name": "STAGE", "value": "script"}]}}
JSON
cat >"$WORK/run.sh" <<'SH'
#!/bin/bash
echo "script STAGE=$STAGE mount=$AZ_BATCHAI_JOB_MOUNT_ROOT"
srun -l sh -c 'echo task=$AZ_BATCHAI_TASK_INDEX STAGE=$STAGE'
SH
chown "$TEST_USER:" "$WORK/run.sh"
id=$(submit --batchai-job=s.json -N2 -n2 -o "$WORK/script-%j.out" run.sh)
st=$(wait_job "$id")
out=$WORK/script-$id.out
[ "$st" = COMPLETED ] || fail "script job $id ended $st: $(cat "$out")"
assert_grep "script STAGE=script mount=$CL/jobs/$id/mounts" "$out"
assert_grep "0: task=0 STAGE=script" "$out"
assert_grep "1: task=1 STAGE=script" "$out"
logs=$(log_dir "$id" s)
for n in n1 n2; do
    assert_grep "prep node=$n uid=$TEST_UID" "$logs/stdout-job_prep-$n.txt"
    assert_grep "job preparation finished with exit code 0" "$logs/execution-$n.log"
done
# batchai-job status knows it for the Batch AI job it is, and where its logs are (its output says so).
install -m 0755 "$BUILD/bin/batchai-job" "$CL/batchai-job" # the user may not reach the build tree
st=$(as_user "$CL/batchai-job status $id" 2>&1) || fail "status of the script job $id: $st"
grep -q "^executionState: *succeeded$" <<<"$st" && grep -qx "stdOutErrPath: *$logs" <<<"$st" ||
    fail "status of the script job $id: $st"
grep -q "^error:" <<<"$st" && fail "status of the script job $id gives an error: $st"
echo "status of a job with its own script:"; sed 's/^/    /' <<<"$st"

id=$(submit --batchai-job=s.json -N2 -o "$WORK/wrap-%j.out" --wrap 'echo wrap STAGE=$STAGE')
[ "$(wait_job "$id")" = COMPLETED ] || fail "--wrap job $id failed: $(cat "$WORK/wrap-$id.out")"
assert_grep "wrap STAGE=script" "$WORK/wrap-$id.out"

# One node where the file says two: stopped with a message naming both counts.
id=$(submit --batchai-job=s.json -N1 -o "$WORK/one-%j.out" run.sh)
st=$(wait_job "$id")
[ "$st" = FAILED ] || fail "job $id on 1 node ended $st, want FAILED"
assert_grep "allocation has 1 node(s) but .*nodeCount 2" "$WORK/one-$id.out"
grep -q "script STAGE" "$WORK/one-$id.out" && fail "the script ran despite the nodeCount mismatch"
st=$(as_user "$CL/batchai-job status $id" 2>&1) && fail "status of the failed job $id exited 0: $st"
grep -q "^executionState: *failed$" <<<"$st" &&
    grep -q "^error: *JobNodeError: .*the allocation has 1 node(s) but .*nodeCount 2" <<<"$st" ||
    fail "status of the job stopped for its nodeCount does not say why: $st"
assert_nodes_idle
pass "script and --wrap jobs prepared and given the environment, known to batchai-job status; nodeCount mismatch stopped, said in status"
