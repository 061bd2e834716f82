#!/usr/bin/env bash
# Hostile user vs slurmd's log: a job file whose name holds a line break and a fake log line, swapped
# after submission so that every node logs its path with the reason. The line break and the escape byte
# reach the log as \n and \x1b: no forged line appears, and the job fails with the cause.
. "$(dirname "$0")/lib.sh"
cluster_start
name=$'forge\n[2020-01-01T00:00:00.000] error: FORGED by the user \e[2J.json'
job='{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "echo main-ran", "processCount": 2},
  '"$LOGS_JSON, $MOUNT_JSON"', "secrets": [{"name": "TOKEN", "value": "tok"}]}}'
write_job "$name" <<<"$job"
id=$(submit --batchai-job="$name" --hold)
as_user "echo ' ' >>$(printf '%q' "$name")"
scontrol release "$id"
st=$(wait_job "$id" 60)
[ "$st" = FAILED ] || fail "job $id ended $st"
# The log directory is named after the file, line break and all.
err=$(find "$SHARE/logs" -path "*/$id/stdouterr/stderr.txt" -print -quit)
[ -n "$err" ] || fail "job $id has no stderr.txt"
assert_grep "the file changed after it was submitted" "$err"
assert_nodes_idle
if grep -h "^\[2020-01-01T00:00:00.000\] error: FORGED" "$CL"/log/*.log; then
    fail "a job file's name forged a line in slurmd's log"
fi
grep -qF 'forge\n[2020-01-01T00:00:00.000] error: FORGED by the user \x1b[2J.json' "$CL"/log/slurmd-n1.log ||
    fail "slurmd's log does not show the escaped name: $(grep -h forge "$CL"/log/slurmd-n1.log | head -n 5)"
grep -q $'\e' "$CL"/log/slurmd-n*.log && fail "an escape byte reached slurmd's log"
pass "a job file name with a line break and an escape sequence reached slurmd's log escaped, job $id failed"
