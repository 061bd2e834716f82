#!/usr/bin/env bash
# batchai-job status / files / stream, as the tutorial's az batchai job show / file list / file stream.
. "$(dirname "$0")/lib.sh"
BJ=$BUILD/bin/batchai-job
[ -x "$BJ" ] || fail "$BJ is not built"
cluster_start
install -m 0755 "$BJ" "$CL/batchai-job"   # the user may not reach the build tree
write_job mon.json <<JSON
{"properties": {"nodeCount": 1,
  "customToolkitSettings": {"commandLine": "sh -c 'for i in 1 2 3; do echo epoch \$i; sleep 0.4; done'"},
  $LOGS_JSON, $MOUNT_JSON}}
JSON
id=$(submit --batchai-job=mon.json --hold)
st=$(as_user "$CL/batchai-job status $id")
grep -q "executionState: *queued" <<<"$st" || fail "held job not queued: $st"
scontrol release "$id"
# stream follows stdout.txt until the job ends.
out=$(as_user "timeout 60 $CL/batchai-job stream $id")
# The attempt's header line (render.c), then the job's own output.
grep -qx "batchai: attempt 1 of job $id started .*" <<<"$(head -n 1 <<<"$out")" &&
    [ "$(tail -n +2 <<<"$out")" = "$(printf 'epoch 1\nepoch 2\nepoch 3')" ] || fail "stream printed: $out"
[ "$(wait_job "$id")" = COMPLETED ] || fail "job $id failed"
st=$(as_user "$CL/batchai-job status $id")
grep -q "executionState: *succeeded" <<<"$st" || fail "status after the end: $st"
files=$(as_user "$CL/batchai-job files $id")
# 24 bytes of the job's output after the attempt's header, "batchai: attempt 1 of job ID started TIME\n".
grep -Eq "^stdout.txt +$((24 + 56 + ${#id})) +[0-9]{4}-" <<<"$files" || fail "files table: $files"
grep -q '^stderr.txt' <<<"$files" || fail "files table lacks stderr.txt: $files"
# A failing job reads failed.
write_job bad.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "false"}, $LOGS_JSON, $MOUNT_JSON}}
JSON
id=$(submit --batchai-job=bad.json)
wait_job "$id" >/dev/null
grep -q "executionState: *failed" <<<"$(as_user "$CL/batchai-job status $id")" || fail "failed job not failed"
as_user "$CL/batchai-job status 99999" 2>/dev/null && fail "unknown job accepted"
pass "status (queued, succeeded, failed), files and stream"
