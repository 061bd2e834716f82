#!/usr/bin/env bash
# batchai-job's job commands, as az batchai's: wait (success, failure, across a requeue, --timeout), list by
# experiment, status --json checked against schemas/batchai-job-status.schema.json by python3-jsonschema, a
# pending job's reason (PartitionNodeLimit), a cancelled queued job, files on a queued job, nodes, exec on the
# second node (the job's AZ_BATCHAI_* variables) and into another user's job (Slurm refuses), terminate (a program's TERM trap runs, the job reads terminated; one that stays is cancelled after the grace),
# status/stream/wait non-zero for a failed job, and a plain sbatch job refused.
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null || skip "Debian's python3-jsonschema is needed"
BJ=$BUILD/bin/batchai-job
[ -x "$BJ" ] || fail "$BJ is not built"
export LOCALCLUSTER_CRED_EXPIRE=10 # a requeued job starts again after cred_expire + 1 s
cluster_start
install -m 0755 "$BJ" "$CL/batchai-job"
# wait and stream poll slurmctld from every 2 s up to every BATCHAI_JOB_POLL_MAX s: 3 s here, for a short test.
bj() { as_user "BATCHAI_JOB_POLL_MAX=3 $CL/batchai-job $*"; }
# validate_json [SCHEMA]: the JSON on stdin against schemas/batchai-job-SCHEMA.schema.json (status).
validate_json() { /usr/bin/python3 -c 'import json, sys, jsonschema
jsonschema.validate(json.load(sys.stdin), json.load(open(sys.argv[1])))' "$TOP/schemas/batchai-job-${1:-status}.schema.json"; }

# A job: nodes, command line.
job() {
    write_job "$1.json" <<JSON
{"properties": {"nodeCount": $2, "customToolkitSettings": {"commandLine": "$3"}, $LOGS_JSON, $MOUNT_JSON}}
JSON
}
# A program with its own TERM trap, as a user writes one: it notes the trap in the share and exits 0
# ("stay": it notes it and goes on, so only the cancel after the grace ends it).
install -d -m 0755 "$CL/bin"
cat >"$CL/bin/trap-term" <<'SH'
#!/bin/sh
out=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/trapped-$SLURM_JOB_ID
if [ "$1" = stay ]; then trap 'echo "trap ran" >"$out"' TERM; else trap 'echo "trap ran" >"$out"; exit 0' TERM; fi
echo "trap set"
while :; do sleep 1; done
SH
chmod 0755 "$CL/bin/trap-term"
job ok 1 "sleep 1"
job bad 1 "sh -c 'echo failing >&2; exit 7'"
job long 2 "$CL/bin/trap-term"
job stay 1 "$CL/bin/trap-term stay"
job huge 4 "true"

# wait: success, its final line and exit 0; failure with the job's own code.
# A name with spaces, as Slurm allows: read whole (scontrol's values are not cut at a space).
ok=$(submit --batchai-job=ok.json -J "ok job  x")
out=$(bj wait "$ok") || fail "wait on a succeeded job returned $?: $out"
[ "$(bj status "$ok" --json | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])')" = "ok job  x" ] ||
    fail "status --json name: $(bj status "$ok" --json)"
grep -qx "job $ok: succeeded (Slurm state COMPLETED, exit code 0:0, attempt 1)" <<<"$out" || fail "wait printed: $out"
bad=$(as_user "$CL/batchai-job submit bad.json --experiment sweep1 --parsable" </dev/null)
rc=0; out=$(bj wait "$bad") || rc=$?
[ $rc = 7 ] || fail "wait on a job that exited 7 returned $rc: $out"
grep -q "^job $bad: failed (Slurm state FAILED, exit code 7:0" <<<"$out" || fail "wait printed: $out"
# A job Slurm does not know, on a cluster without accounting: both sources named.
rc=0; out=$(bj status 999999 2>&1) || rc=$?
[ $rc = 1 ] && grep -q "job 999999 is unknown to slurmctld (or it forgot the job after MinJobAge), and accounting cannot say either (sacct: " <<<"$out" ||
    fail "status of an unknown job: $rc $out"
rc=0; bj status "$bad" >/dev/null || rc=$?
[ $rc = 1 ] || fail "status of a failed job returned $rc"
rc=0; bj stream "$bad" stderr.txt >/dev/null || rc=$?
[ $rc = 1 ] || fail "stream of a failed job returned $rc"
# status --json of the failed job, by an independent reader.
bj status "$bad" --json >"$CL/bad.json" || true
validate_json <"$CL/bad.json" || fail "status --json is not valid: $(cat "$CL/bad.json")"
/usr/bin/python3 - "$CL/bad.json" <<'PY' || fail "status --json of the failed job: $(cat "$CL/bad.json")"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["executionState"] == "failed" and o["executionInfo"]["exitCode"] == 7, o
assert o["experiment"] == "sweep1" and o["attempt"] == 1 and o["lastRequeue"] is None, o
assert o["stdOutErrPath"].endswith("/%s/stdouterr" % o["jobId"]), o
assert any(e["code"] == "JobFailed" for e in o["executionInfo"]["errors"]), o
PY

# A job that cannot start: Slurm's reason is shown, queued; cancelled, it reads cancelled, not failed 0:0.
huge=$(submit --batchai-job=huge.json)
for ((i = 0; i < 50; i++)); do [ "$(job_field "$huge" Reason)" = PartitionNodeLimit ] && break; sleep 0.1; done
st=$(bj status "$huge") || fail "status of a queued job failed: $st"
grep -q "^pendingReason: *PartitionNodeLimit" <<<"$st" || fail "no pending reason: $st"
bj status "$huge" --json | validate_json || fail "status --json of a queued job is not valid"
rc=0; out=$(bj files "$huge" 2>&1) || rc=$?
[ $rc = 1 ] && grep -q "is queued: its log directory is made when it starts" <<<"$out" || fail "files on a queued job: $rc $out"
rc=0; out=$(bj wait "$huge" --timeout 2) || rc=$?
[ $rc = 124 ] && grep -q "still queued after 2 s" <<<"$out" || fail "wait --timeout: $rc $out"
as_user "scancel $huge"
rc=0; st=$(bj status "$huge") || rc=$?
[ $rc = 1 ] && grep -q "^executionState: *cancelled" <<<"$st" && grep -q "^exitCode: *none" <<<"$st" ||
    fail "cancelled queued job: $rc $st"

# An Azure ML job's experiment_name is recorded on the Slurm job as submit --experiment's is, and its
# display_name is the job's name, whole through sbatch's reading of #SBATCH lines (quotes, '#', a backslash).
write_job aml.yml <<'YAML'
command: "true"
experiment_name: aml-exp
display_name: 'Gpu Diag (NCCL "tests") #1, it''s \ ok é'
YAML
aml=$(submit --batchai-job=aml.yml --hold)
# list: newest first, by experiment; a plain job of the user's is not listed.
plain=$(submit --wrap 'sleep 30' -o /dev/null --hold)
l=$(bj list)
[ "$(awk 'NR > 1 {print $1}' <<<"$l" | tr '\n' ' ')" = "$aml $huge $bad $ok " ] || fail "list: $l"
l=$(bj list --experiment sweep1)
[ "$(awk 'NR > 1 {print $1}' <<<"$l" | tr '\n' ' ')" = "$bad " ] || fail "list --experiment sweep1: $l"
l=$(bj list --experiment aml-exp)
[ "$(awk 'NR > 1 {print $1}' <<<"$l" | tr '\n' ' ')" = "$aml " ] || fail "list --experiment aml-exp: $l"
[[ "$(tail -n 1 <<<"$l")" == *" aml-exp "*" Gpu Diag (NCCL \"tests\") #1, it's \\ ok é" ]] ||
    fail "list does not show the display name: $l"
as_user "scancel $aml"

# A held two-node job as status, nodes and stream show it; cancelled before it ran, it has no start time.
held=$(submit --batchai-job=long.json --hold)
st=$(bj status "$held") || fail "status of a held job: $st"
grep -qx "nodeCount: *2" <<<"$st" && grep -qx "exitCode: *none yet (it has not ended)" <<<"$st" ||
    fail "status of a held job (nodeCount 2, no exit code yet): $st"
rc=0; out=$(bj nodes "$held" 2>&1) || rc=$?
[ $rc = 1 ] && [ "$out" = "batchai-job: job $held is queued: it holds no nodes (JobHeldUser)" ] ||
    fail "nodes on a held job: $rc $out"
rc=0; out=$(as_user "timeout 2 $CL/batchai-job stream $held" 2>&1) || rc=$?
[ $rc = 124 ] && grep -qF "batchai-job: job $held is queued (JobHeldUser): waiting for it to start" <<<"$out" ||
    fail "stream on a held job does not say it waits (or did not wait): $rc $out"
as_user "scancel $held"
st=$(bj status "$held") && fail "status of a job cancelled in the queue exited 0: $st"
! grep -q "^startTime:" <<<"$st" || fail "a job cancelled before it ran shows a start time: $st"
[ "$(bj status "$held" --json | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["executionInfo"]["startTime"])')" = None ] ||
    fail "status --json of a job cancelled before it ran has a startTime"

# A running two-node job: nodes, exec on the second node, another user refused, terminate.
long=$(submit --batchai-job=long.json)
for ((i = 0; i < 100; i++)); do [ "$(job_field "$long" JobState)" = RUNNING ] && break; sleep 0.1; done
n=$(bj nodes "$long") || fail "nodes: $n"
grep -Eq '^n1 +[^ ]+ +[A-Z+]+ ' <<<"$n" && grep -Eq '^n2 ' <<<"$n" || fail "nodes table: $n"
n=$(bj nodes "$long" --json) || fail "nodes --json: $n"
validate_json nodes <<<"$n" || fail "nodes --json is not valid: $n"
[ "$(/usr/bin/python3 -c 'import json, sys; print(" ".join(n["name"] for n in json.load(sys.stdin)["nodes"]))' <<<"$n")" = "n1 n2" ] ||
    fail "nodes --json: $n"
# The job's variables, and its log directory through the job's mount.
out=$(bj exec "$long" --node n2 -- sh -c "'echo \$SLURMD_NODENAME \$AZ_BATCHAI_JOB_NAME \$AZ_BATCHAI_TASK_INDEX; test -f \$AZ_BATCHAI_STDOUTERR_DIR/stdout.txt && echo mounted'" 2>&1) ||
    fail "exec: $out"
[ "$(tail -n 2 <<<"$out")" = "$(printf 'n2 long 1\nmounted')" ] || fail "exec on n2 printed: $out"
"$LC" adduser batchai-other >/dev/null
other=$(runuser -u batchai-other -- env -C /tmp SLURM_CONF="$SLURM_CONF" sbatch --parsable -D /tmp --wrap 'sleep 60')
for ((i = 0; i < 100; i++)); do [ "$(job_field "$other" JobState)" = RUNNING ] && break; sleep 0.1; done
rc=0; out=$(bj exec "$other" -- true 2>&1) || rc=$?
[ $rc != 0 ] && grep -qi "denied\|not authorized\|permission" <<<"$out" || fail "exec into another user's job: $rc $out"
scancel "$other"
rc=0; out=$(bj status "$plain" 2>&1) || rc=$?
[ $rc = 1 ] && grep -q "is not a Batch AI or Azure ML job" <<<"$out" && ! grep -q "$WORK" <<<"$out" ||
    fail "status of a plain job: $rc $out"
as_user "scancel $plain"
# terminate: the main step's program gets SIGTERM and its trap runs (the batch shell is spared, so srun does
# not kill it), and the job reads terminated, whatever its exit; one that does not stop is cancelled after the grace.
# wait_trap ID NAME: until the job's program has set its trap (the main step starts after the preparation).
wait_trap() {
    for ((i = 0; i < 100; i++)); do grep -q "^trap set" "$(log_dir "$1" "$2")/stdout.txt" 2>/dev/null && return; sleep 0.1; done
    fail "job $1's program did not start within 10 s"
}
wait_trap "$long" long
out=$(bj terminate "$long" --grace 10) || fail "terminate: $out"
grep -q "^job $long: terminated: it stopped within [0-9]* s (Slurm state COMPLETED, exit code 0:0)" <<<"$out" ||
    fail "terminate printed: $out"
[ -f "$SHARE/trapped-$long" ] || fail "the program's TERM trap did not run: $(cat "$(log_dir "$long" long)"/std*.txt)"
rc=0; st=$(bj status "$long") || rc=$?
[ $rc = 1 ] && grep -q "^executionState: *terminated" <<<"$st" &&
    grep -q "^error: *JobTerminated: batchai-job terminate at [0-9T:Z-]*: its steps had SIGTERM and stopped; the job ended COMPLETED with exit code 0:0" <<<"$st" ||
    fail "status of the terminated job: $rc $st"
bj status "$long" --json >"$CL/long.json" || true # exit 1: it did not succeed
validate_json <"$CL/long.json" || fail "status --json of a terminated job is not valid: $(cat "$CL/long.json")"
rc=0; out=$(bj wait "$long") || rc=$?
[ $rc = 1 ] && grep -qx "job $long: terminated (Slurm state COMPLETED, exit code 0:0, attempt 1)" <<<"$out" ||
    fail "wait on the terminated job: $rc $out"
stay=$(submit --batchai-job=stay.json)
for ((i = 0; i < 100; i++)); do [ "$(job_field "$stay" JobState)" = RUNNING ] && break; sleep 0.1; done
wait_trap "$stay" stay
out=$(bj terminate "$stay" --grace 2) || fail "terminate: $out"
grep -q "^job $stay: terminated: still running after the 2 s grace, cancelled" <<<"$out" || fail "terminate printed: $out"
[ -f "$SHARE/trapped-$stay" ] || fail "the staying program's TERM trap did not run"
for ((i = 0; i < 100; i++)); do [ "$(job_field "$stay" JobState)" = CANCELLED ] && break; sleep 0.1; done
st=$(bj status "$stay") || true
grep -q "^executionState: *terminated" <<<"$st" && grep -q "did not stop within the grace; the job was cancelled" <<<"$st" ||
    fail "status of the job cancelled after the grace: $st"

# wait across a requeue: it returns only when the second attempt ended.
job rq 1 "sleep 2"
rq=$(submit --batchai-job=rq.json)
for ((i = 0; i < 100; i++)); do [ "$(job_field "$rq" JobState)" = RUNNING ] && break; sleep 0.1; done
bj wait "$rq" >"$CL/rq.out" &
waiter=$!
sleep 0.5
scontrol requeue "$rq"
# Slurm holds the requeued job until cred_expire + 1 s, then starts it at its next scheduling pass, which
# may be a minute away; an update of the job brings that pass forward (and changes nothing else).
for ((i = 0; i < 60; i++)); do
    sleep 1
    [ "$(job_field "$rq" JobState)" = PENDING ] || break
    [ $i -lt 11 ] || scontrol update jobid="$rq" Nice=0
done
wait "$waiter" || fail "wait on the requeued job returned $?: $(cat "$CL/rq.out")"
grep -qx "job $rq: succeeded (Slurm state COMPLETED, exit code 0:0, attempt 2)" "$CL/rq.out" ||
    fail "wait across a requeue printed: $(cat "$CL/rq.out")"
pass "wait, list, status --json, pending reason, cancelled, files queued, nodes, exec, terminate, plain job refused"
