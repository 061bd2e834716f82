#!/usr/bin/env bash
# A stdOutErrPathPrefix the user cannot write: sbatch refuses it at submission naming the field and the
# directory; and a prefix that goes away while the job waits fails the job on its node with the reason in
# batchai-job status's errors[], naming the node, not only in slurmd's log.
. "$(dirname "$0")/lib.sh"
BJ=$BUILD/bin/batchai-job
[ -x "$BJ" ] || fail "$BJ is not built"
cluster_start
install -m 0755 "$BJ" "$CL/batchai-job"
write_job np.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "echo x"},
  "stdOutErrPathPrefix": "/nonexistent/logs", $MOUNT_JSON}}
JSON
rc=0; out=$(as_user "sbatch --parsable --batchai-job=np.json" </dev/null 2>&1) || rc=$?
[ $rc != 0 ] || fail "sbatch accepted a log prefix under /nonexistent: $out"
grep -q "stdOutErrPathPrefix: the log directory /nonexistent/logs/np/%j/stdouterr cannot be made: / is not writable by you" <<<"$out" ||
    fail "sbatch's refusal: $out"
rc=0; out=$(as_user "$CL/batchai-job validate np.json" 2>&1) || rc=$?
[ $rc = 1 ] && grep -q "/ is not writable by you" <<<"$out" || fail "validate: $rc $out"
# Writable at submission, not any more when the job starts.
install -d -o "$TEST_USER" -m 0755 "$WORK/mine"
write_job gone.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "echo x"},
  "stdOutErrPathPrefix": "$WORK/mine/logs", $MOUNT_JSON}}
JSON
id=$(submit --batchai-job=gone.json --hold)
chmod 0555 "$WORK/mine"
scontrol release "$id"
wait_job "$id" >/dev/null
rc=0; st=$(as_user "$CL/batchai-job status $id" 2>&1) || rc=$?
[ $rc = 1 ] || fail "status of the failed job returned $rc: $st"
grep -q "^error: *JobNodeError: node n1 could not make the job's log directory $WORK/mine/logs/gone/$id/stdouterr (Slurm exit code 0:53): $WORK/mine is not writable by you$" <<<"$st" ||
    fail "status names no node's failure: $st"
json=$(as_user "$CL/batchai-job status $id --json") && fail "status --json of a failed job returned 0"
/usr/bin/python3 -c 'import json, sys, jsonschema
jsonschema.validate(json.load(sys.stdin), json.load(open(sys.argv[1])))' "$TOP/schemas/batchai-job-status.schema.json" <<<"$json" ||
    fail "status --json of the job is not valid: $json"
pass "a log prefix the user cannot write is refused at submission; one gone at start is named in status"
