#!/usr/bin/env bash
# A job with its own script (and one with --wrap): the plugin still prepares the nodes (directories,
# mounts, jobPreparation on every node as the user) and sets the environment; an allocation that
# contradicts nodeCount stops the job with a clear message and leaves the nodes idle.
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

id=$(submit --batchai-job=s.json -N2 -o "$WORK/wrap-%j.out" --wrap 'echo wrap STAGE=$STAGE')
[ "$(wait_job "$id")" = COMPLETED ] || fail "--wrap job $id failed: $(cat "$WORK/wrap-$id.out")"
assert_grep "wrap STAGE=script" "$WORK/wrap-$id.out"

# One node where the file says two: stopped with a message naming both counts.
id=$(submit --batchai-job=s.json -N1 -o "$WORK/one-%j.out" run.sh)
st=$(wait_job "$id")
[ "$st" = FAILED ] || fail "job $id on 1 node ended $st, want FAILED"
assert_grep "allocation has 1 node(s) but .*nodeCount 2" "$WORK/one-$id.out"
grep -q "script STAGE" "$WORK/one-$id.out" && fail "the script ran despite the nodeCount mismatch"
assert_nodes_idle
pass "script and --wrap jobs prepared and given the environment; nodeCount mismatch stopped"
