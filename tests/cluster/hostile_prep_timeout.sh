#!/usr/bin/env bash
# Hostile user vs the prolog's time (security findings 3, 4 and 17.4): a preparation that never ends, in
# both forms (the generated script and the user's own script), runs as a job step, as the user, inside the
# job's time limit; the prolog never waits for it. Jobs with their own script get the file's
# maxWallClockTime too. Both jobs end by the time limit, and no node is left drained or completing.
# run-tests: beside
. "$(dirname "$0")/lib.sh"
cluster_start
write_job quick.json <<JSON
{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "echo main uid=\$(id -u)", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "jobPreparation": {"commandLine": "echo prep step=\$SLURM_STEP_ID uid=\$(id -u)"}}}
JSON
# The preparation and the main step run as job steps of the user's (not in the prolog, not as root).
id=$(submit --batchai-job=quick.json)
[ "$(wait_job "$id")" = COMPLETED ] || fail "job $id failed: $(cat "$(log_dir "$id" quick)/stderr.txt")"
for n in n1 n2; do
    assert_grep "^prep step=[0-9][0-9]* uid=$TEST_UID\$" "$(log_dir "$id" quick)/stdout-job_prep-$n.txt"
done
[ "$(grep -c "^main uid=$TEST_UID\$" "$(log_dir "$id" quick)/stdout.txt")" = 2 ] || fail "main step not the user's"

write_job forever.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "echo main-ran"}, $LOGS_JSON, $MOUNT_JSON,
  "constraints": {"maxWallClockTime": "00:01:00"},
  "jobPreparation": {"commandLine": "echo prep-started; sleep 600"}}}
JSON
cat >"$WORK/run.sh" <<'SH'
#!/bin/sh
echo script-ran
SH
chown "$TEST_USER:" "$WORK/run.sh"
gen=$(submit --batchai-job=forever.json)
own=$(submit --batchai-job=forever.json -o "$WORK/own-%j.out" run.sh)
# The file's limit holds for the job with its own script (no --time given).
[ "$(job_field "$own" TimeLimit)" = 00:01:00 ] || fail "own-script job $own has TimeLimit $(job_field "$own" TimeLimit)"
# Both run their preparation as a step (the prolog has long returned: the jobs are RUNNING).
for i in $(seq 100); do
    [ "$(job_field "$gen" JobState)$(job_field "$own" JobState)" = RUNNINGRUNNING ] && break
    sleep 0.2
done
[ "$(job_field "$gen" JobState)$(job_field "$own" JobState)" = RUNNINGRUNNING ] || fail "the jobs did not start"
for j in "$gen" "$own"; do
    [ "$(wait_job "$j" 200)" = TIMEOUT ] || fail "job $j did not end at its time limit: $(job_field "$j" JobState)"
done
grep -q "main-ran" "$(log_dir "$gen" forever)/stdout.txt" && fail "main step ran after a failed preparation"
grep -q "script-ran" "$WORK/own-$own.out" && fail "the user's script ran before its preparation ended"
assert_nodes_idle
pass "preparation ran as the user's job step; an endless one ended at the file's time limit in both forms"
