#!/usr/bin/env bash
# A stdOutErrPathPrefix the user cannot write: sbatch refuses it at submission naming the field and the
# directory; one on no mount of the job, and an output directory on a mount the cluster lacks, naming the mount; and a prefix that goes away while the job waits fails the job on its node with the reason in
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
# A prefix on no mount of the job ($AZ_BATCHAI_JOB_MOUNT_ROOT/<not a relativeMountPath>), and an output
# directory on a mount of mount_root the cluster does not have (the Horovod-PyTorch recipe's
# $AZ_BATCHAI_MOUNT_ROOT/external): refused by sbatch and validate naming the mount, not blaming job_root
# as "not writable" nor failing at start with "Permission denied".
mkdir -p "$CL/mounts"
write_job nomount.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "echo x"},
  "stdOutErrPathPrefix": "\$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/logs", $MOUNT_JSON,
  "outputDirectories": [{"id": "MODEL", "pathPrefix": "\$AZ_BATCHAI_MOUNT_ROOT/external"}]}}
JSON
for how in "sbatch --parsable --batchai-job=nomount.json" "$CL/batchai-job validate nomount.json"; do
    rc=0; out=$(as_user "$how" </dev/null 2>&1) || rc=$?
    [ $rc != 0 ] || fail "$how accepted a log prefix and an output on missing mounts: $out"
    grep -q 'stdOutErrPathPrefix: the log directory is on $AZ_BATCHAI_JOB_MOUNT_ROOT/afs, which is not mounted: no mountVolumes entry has relativeMountPath "afs" (the job mounts myshare)' <<<"$out" ||
        fail "$how: the log prefix's missing mount is not named: $out"
    grep -q "outputDirectories\[0\].pathPrefix: output directory \"MODEL\" is on \$AZ_BATCHAI_MOUNT_ROOT/external, which is not mounted on this cluster (no directory $CL/mounts/external" <<<"$out" ||
        fail "$how: the output directory's missing mount is not named: $out"
    grep -q "not writable" <<<"$out" && fail "$how blames a directory's rights for a missing mount: $out"
done
echo "a log prefix and an output on missing mounts, refused:"; sed 's/^/    /' <<<"$out"
[ -z "$(squeue -h -o %i)" ] || fail "a refused job was queued: $(squeue)"
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
pass "a log prefix the user cannot write, or on no mount, and an output on a missing mount are refused at submission; a prefix gone at start is named in status"
