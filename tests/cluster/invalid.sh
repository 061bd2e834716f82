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
# Too big for the partition (2 nodes, 4 CPUs here): validate and submit ask slurmctld and say so, naming the
# partition's size, instead of a job that waits for ever (PartitionConfig) or a refusal naming neither.
install -m 0755 "$BUILD/bin/batchai-job" "$CL/batchai-job" # the user may not reach the build tree
write_job five.json <<JSON
{"properties": {"nodeCount": 5, "customMpiSettings": {"commandLine": "true"}, $LOGS_JSON, $MOUNT_JSON}}
JSON
write_job eight.json <<JSON
{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "true", "processCount": 8}, $LOGS_JSON, $MOUNT_JSON}}
JSON
for how in validate submit; do
    rc=0; out=$(as_user "$CL/batchai-job $how five.json" </dev/null 2>&1) || rc=$?
    [ $rc = 1 ] || fail "batchai-job $how five.json exited $rc: $out"
    grep -q "five.json: properties.nodeCount: 5 nodes, but partition debug (the default partition) has 2 (TotalNodes=2)" <<<"$out" ||
        fail "batchai-job $how five.json does not name the partition's size: $out"
    rc=0; out=$(as_user "$CL/batchai-job $how eight.json" </dev/null 2>&1) || rc=$?
    [ $rc = 1 ] || fail "batchai-job $how eight.json exited $rc: $out"
    grep -q "eight.json: properties.customMpiSettings.processCount: 8 processes, each with a CPU of its own, but partition debug (the default partition) has 4 CPUs in all (TotalCPUs=4 on 2 node(s))" <<<"$out" ||
        fail "batchai-job $how eight.json does not name the partition's CPUs: $out"
done
echo "too big for the partition:"; sed 's/^/    /' <<<"$out"
# sbatch itself queues the same file (slurmctld without EnforcePartLimits), where it would wait for ever:
# batchai-job status says so, naming the partition's size.
id=$(submit --batchai-job=five.json)
for ((i = 0; i < 50; i++)); do
    case $(job_field "$id" Reason) in PartitionNodeLimit | PartitionConfig) break ;; esac
    sleep 0.1
done
st=$(as_user "$CL/batchai-job status $id" 2>&1) || fail "status of the queued job $id: $st"
scancel "$id"
grep -q "^error: *JobWillNotStart: it will never start: it asks for 5 nodes, but partition debug has 2 (TotalNodes=2)" <<<"$st" ||
    fail "status of a job bigger than its partition (reason $(job_field "$id" Reason)) does not say it will never start: $st"
echo "sbatch --batchai-job=five.json queued it; status:"; sed 's/^/    /' <<<"$st"
# What fits still goes (and an option typed on submit's line wins over the file, as with sbatch).
as_user "$CL/batchai-job validate bad.json" >/dev/null 2>&1 && fail "validate accepted bad.json"
out=$(as_user "$CL/batchai-job submit five.json --nodes=2 --hold --parsable" </dev/null 2>&1) ||
    fail "batchai-job submit five.json --nodes=2 was refused: $out"
scancel "${out%%;*}"
[ -z "$(squeue -h -o %i -t PD,R)" ] || fail "a refused job was queued: $(squeue)"
pass "invalid job files refused by sbatch, nothing queued; jobs too big for the partition refused by validate and submit naming its size"
