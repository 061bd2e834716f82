#!/usr/bin/env bash
# A 2-node job from a job file with no script: the allocation comes from the file, preparation runs once
# per node as the user, and the Batch AI log layout appears in the log directory.
. "$(dirname "$0")/lib.sh"
cluster_start
write_job two.json <<JSON
{"properties": {
  "nodeCount": 2,
  "customMpiSettings": {"commandLine": "sh -c 'echo main rank=\$AZ_BATCHAI_TASK_INDEX node=\$SLURMD_NODENAME'", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "jobPreparation": {"commandLine": "echo prep node=\$SLURMD_NODENAME uid=\$(id -u)"},
  "constraints": {"maxWallClockTime": "0.00:05:00"}
}}
JSON
id=$(submit --batchai-job=two.json)
st=$(wait_job "$id")
logs=$(log_dir "$id" two)
[ "$st" = COMPLETED ] || fail "job $id ended $st: $(cat "$logs"/stderr.txt 2>/dev/null)"
[ "$(job_field "$id" NumNodes)" = 2 ] || fail "NumNodes=$(job_field "$id" NumNodes), want 2"
[ "$(job_field "$id" JobName)" = two ] || fail "JobName=$(job_field "$id" JobName), want two"
[ "$(job_field "$id" TimeLimit)" = 00:05:00 ] || fail "TimeLimit=$(job_field "$id" TimeLimit)"
for f in stdout.txt stderr.txt execution-n1.log execution-n2.log; do assert_file "$logs/$f"; done
for n in n1 n2; do assert_file "$logs/stdout-job_prep-$n.txt"; assert_file "$logs/stderr-job_prep-$n.txt"; done
assert_grep "main rank=0 node=n1" "$logs/stdout.txt"
assert_grep "main rank=1 node=n2" "$logs/stdout.txt"
# Preparation once per node, as the user (never root).
prep=$(cat "$logs"/stdout-job_prep-*.txt)
for n in n1 n2; do
    [ "$(grep -c "prep node=$n " <<<"$prep")" = 1 ] || fail "preparation on $n ran not exactly once: $prep"
    assert_grep "job preparation finished with exit code 0" "$logs/execution-$n.log"
done
grep -q "uid=0" <<<"$prep" && fail "preparation ran as root: $prep"
[ "$(grep -c "uid=$TEST_UID" <<<"$prep")" = 2 ] || fail "preparation not as uid $TEST_UID: $prep"
[ "$(stat -c %U "$logs/stdout.txt")" = "$TEST_USER" ] || fail "stdout.txt not owned by $TEST_USER"
assert_nodes_idle
pass "2-node job $id from a file with no script; preparation on n1 and n2 as uid $TEST_UID"
