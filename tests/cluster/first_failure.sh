#!/usr/bin/env bash
# The job's exit code is its first failing task's own: in a 2-rank job (one rank per node) where rank 0 exits
# 7 and srun then kills rank 1, the job ends 7:0, not srun's 143; the plugin noted each failing task in its
# node's execution log (slurm_spank_task_exit, as the user), the batch script names the first in the
# execution log and stderr.txt, and batchai-job wait exits 7 and status shows it in errors[]. Notes led at
# root's files by the user change nothing.
. "$(dirname "$0")/lib.sh"
BJ=$BUILD/bin/batchai-job
[ -x "$BJ" ] || fail "$BJ is not built"
cluster_start
install -m 0755 "$BJ" "$CL/batchai-job"
write_job ff.json <<JSON
{"properties": {"nodeCount": 2,
  "customMpiSettings": {"commandLine": "sh -c 'if [ \$SLURM_PROCID = 0 ]; then sleep 1; exit 7; fi; exec sleep 60'", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON}}
JSON
id=$(submit --batchai-job=ff.json)
rc=0; out=$(as_user "$CL/batchai-job wait $id") || rc=$?
[ $rc = 7 ] || fail "wait returned $rc, not rank 0's 7: $out"
[ "$(job_field "$id" ExitCode)" = 7:0 ] || fail "Slurm's exit code is $(job_field "$id" ExitCode), not 7:0"
logs=$(log_dir "$id" ff)
grep -q " attempt 1: task 0 of step [0-9]* exited with code 7$" "$logs/execution-n1.log" ||
    fail "n1's execution log does not note task 0's exit: $(cat "$logs"/execution-*.log)"
grep -q " attempt 1: first failing task 0 of step [0-9]* exited with code 7 (srun returned [0-9]*)$" "$logs"/execution-n1.log ||
    fail "the batch script did not name the first failing task: $(cat "$logs"/execution-*.log)"
grep -q " attempt 1: main step finished with exit code 7$" "$logs/execution-n1.log" || fail "main step's code: $(cat "$logs/execution-n1.log")"
grep -q "^batchai: first failing task 0 of step" "$logs/stderr.txt" || fail "stderr.txt: $(cat "$logs/stderr.txt")"
st=$(as_user "$CL/batchai-job status $id") && fail "status of the failed job returned 0"
grep -q "^exitCode: *7:0" <<<"$st" && grep -q "^error: *JobNodeError: first failing task 0 of step" <<<"$st" ||
    fail "status: $st"
# Hostile: the note's directory comes from the step's environment, which the user sets. Pointed at root's
# directory, or at a user directory whose execution log is a link to root's file, nothing of root's changes
# (the note is written as the user, O_NOFOLLOW) and the steps still end with their own codes.
victim_make
as_user "mkdir -p evil && ln -s '$VICTIM/file' evil/execution-n1.log"
cat >"$WORK/rogue.sh" <<SH
#!/bin/sh
AZ_BATCHAI_STDOUTERR_DIR=$VICTIM srun -N1 -n1 -w n1 sh -c 'exit 5'
AZ_BATCHAI_STDOUTERR_DIR=$WORK/evil srun -N1 -n1 -w n1 sh -c 'exit 6'
echo "steps: done"
SH
chown "$TEST_USER:" "$WORK/rogue.sh"
write_job rogue.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "true"}, $LOGS_JSON, $MOUNT_JSON}}
JSON
rid=$(submit --batchai-job=rogue.json -w n1 -o "$WORK/rogue-%j.out" rogue.sh)
[ "$(wait_job "$rid")" = COMPLETED ] || fail "rogue job $rid: $(cat "$WORK/rogue-$rid.out")"
assert_grep "steps: done" "$WORK/rogue-$rid.out"
assert_victim_unchanged
[ -L "$WORK/evil/execution-n1.log" ] || fail "the planted link was replaced"
pass "rank 0's exit 7 is the job's (Slurm 7:0, wait 7), named in the execution log, stderr.txt and status; notes never reach root's files"
