#!/usr/bin/env bash
# Fault injected for real: job_root is full (a 64 KiB tmpfs mounted over it and filled), so the prolog can
# keep neither its copy of the job file nor a failure marker. Nothing of the job may run: its tasks find no
# copy and fail with the plugin's message, the slurmd log names the cause (no space left), and the nodes
# stay idle with no drain reason. Once there is room again, the next job runs.
. "$(dirname "$0")/lib.sh"
cluster_start
# The fault is n1's, where the job runs: job_root is node-local (in hosts mode, a mount made here would not
# reach n1).
on_host n1 mount -t tmpfs -o size=64k,mode=0755,uid=0,gid=0 batchai-full "$CL/jobs" || skip "cannot mount a tmpfs here"
unmount_then_stop() {
    local rc=$?
    on_host n1 umount "$CL/jobs" 2>/dev/null || on_host n1 umount -l "$CL/jobs" 2>/dev/null || true
    (exit $rc)
    cluster_stop
}
trap unmount_then_stop EXIT
on_host n1 dd if=/dev/zero of="$CL/jobs/fill" bs=4k 2>/dev/null || true
[ "$(on_host n1 df --output=avail -B1 "$CL/jobs" | tail -n 1)" -eq 0 ] || fail "the tmpfs over job_root is not full"
write_job full.json <<JSON
{"properties": {"nodeCount": 1, $LOGS_JSON, $MOUNT_JSON, "customToolkitSettings": {"commandLine": "echo main-ran"}}}
JSON
id=$(submit --batchai-job=full.json)
st=$(wait_job "$id")
logs=$(log_dir "$id" full)
[ "$st" = FAILED ] || fail "job $id ended $st with job_root full"
assert_grep "node n1 was not prepared" "$logs/stderr.txt"
! grep -qs main-ran "$logs/stdout.txt" || fail "job $id ran with job_root full"
assert_grep "job $id on n1: cannot keep the job file in job_root .*No space left on device" "$CL/log/slurmd-n1.log"
assert_nodes_idle
[ -z "$(sinfo -h -R)" ] || fail "a node has a drain reason: $(sinfo -R)"
# Room again: the same file runs.
on_host n1 rm -f "$CL/jobs/fill"
id2=$(submit --batchai-job=full.json)
st=$(wait_job "$id2")
[ "$st" = COMPLETED ] || fail "job $id2 ended $st once job_root had room again"
assert_grep main-ran "$(log_dir "$id2" full)/stdout.txt"
pass "a full job_root failed job $id with the cause in slurmd's log and nothing run; job $id2 ran once there was room"
