#!/usr/bin/env bash
# An invalid job file is refused by sbatch before anything is queued, with the validator's messages.
. "$(dirname "$0")/lib.sh"
cluster_start
write_job bad.json <<JSON
{"properties": {"nodeCount": "four", $LOGS_JSON, "customToolkitSettings": {"commandLine": "true"}, "bogusField": 1}}
JSON
# A share the site does not have (no directory under shares_root): refused at submit time.
write_job unmapped.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "true"},
  "stdOutErrPathPrefix": "\$AZ_BATCHAI_JOB_MOUNT_ROOT/other/logs",
  "mountVolumes": {"azureFileShares": [{"azureFileUrl": "https://x.file.core.windows.net/nosuchshare", "relativeMountPath": "other"}]}}}
JSON
for f in bad.json unmapped.json missing.json; do
    if out=$(as_user sbatch --batchai-job=$f 2>&1 </dev/null); then
        fail "sbatch accepted $f: $out"
    fi
    grep -q "batchai: " <<<"$out" || fail "no batchai: message for $f: $out"
    grep -q "Submitted" <<<"$out" && fail "$f was submitted: $out"
    echo "$f refused: $out"
done
grep -q "bad.json: properties\." <<<"$(as_user sbatch --batchai-job=bad.json 2>&1 </dev/null || true)" ||
    fail "the message for bad.json does not name the JSON path of the fault"
[ -z "$(squeue -h -o %i)" ] || fail "something was queued: $(squeue)"
[ "$(scontrol show jobs 2>&1)" = "No jobs in the system" ] || fail "a job record exists: $(scontrol show jobs)"
pass "invalid job files refused by sbatch, nothing queued"
