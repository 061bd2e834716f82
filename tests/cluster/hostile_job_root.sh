#!/usr/bin/env bash
# Hostile user vs job_root (security findings 1 and 17.6): a job_root that the user can write, or that the
# user has replaced with a symbolic link to a root directory, is refused on every node. Root creates
# nothing through it, chowns nothing, the job fails naming job_root, and both nodes stay idle.
. "$(dirname "$0")/lib.sh"
cluster_start
victim_make
install -d -o "$TEST_USER" -m 0755 "$CL/userdir"
write_job j.json <<JSON
{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "echo main-ran", "processCount": 2},
  "stdOutErrPathPrefix": "$WORK/logs"}}
JSON
restart_with_job_root() {
    "$LC" stop "$CL" >/dev/null
    lc_start "$CL" --plugin "$PLUGIN" --plugin-args "shares_root=$CL/shares job_root=$1" >/dev/null
}

# 1. The user made job_root first, in a directory of theirs (as anyone can in /tmp).
restart_with_job_root "$CL/userdir/batchai"
as_user "mkdir -m 0777 '$CL/userdir/batchai'"
id=$(submit --batchai-job=j.json)
st=$(wait_job "$id")
err=$WORK/logs/j/$id/stdouterr/stderr.txt
[ "$st" = FAILED ] || fail "job $id with a user-made job_root ended $st"
grep -q "main-ran" "$WORK/logs/j/$id/stdouterr/stdout.txt" && fail "the main step ran"
assert_grep "job_root $CL/userdir/batchai.*owned by uid $TEST_UID, not root" "$err"
[ -z "$(find "$CL/userdir" -mindepth 2)" ] || fail "root created something in the user's job_root: $(find "$CL/userdir")"
assert_nodes_idle

# 2. The user swapped job_root for a link to a root directory: nothing may appear there, nothing change.
as_user "rmdir '$CL/userdir/batchai' && ln -s '$VICTIM' '$CL/userdir/batchai'"
id=$(submit --batchai-job=j.json)
st=$(wait_job "$id")
[ "$st" = FAILED ] || fail "job $id with a linked job_root ended $st"
assert_grep "job_root $CL/userdir/batchai" "$WORK/logs/j/$id/stdouterr/stderr.txt"
assert_victim_unchanged
assert_nodes_idle

# 3. A root-owned job_root under a parent that others can write (/tmp's mode) is refused as well.
install -d -m 1777 "$CL/sticky"
restart_with_job_root "$CL/sticky/batchai"
id=$(submit --batchai-job=j.json)
st=$(wait_job "$id")
[ "$st" = FAILED ] || fail "job $id under a world-writable parent ended $st"
assert_grep "$CL/sticky is writable by group or others" "$WORK/logs/j/$id/stdouterr/stderr.txt"
[ ! -e "$CL/sticky/batchai" ] || fail "root created job_root under a world-writable directory"
assert_nodes_idle

# 4. The admin's job_root, missing at first, is created by root with mode 0755 and each job's directory is
#    the user's, mode 0700; the epilog removes it.
restart_with_job_root "$CL/root/jobs"
id=$(submit --batchai-job=j.json)
[ "$(wait_job "$id")" = COMPLETED ] || fail "job $id with a good job_root failed: $(cat "$WORK/logs/j/$id/stdouterr/stderr.txt")"
[ "$(stat -c '%U %a' "$CL/root/jobs")" = "root 755" ] || fail "job_root is $(stat -c '%U %a' "$CL/root/jobs")"
assert_nodes_idle
[ -z "$(ls -A "$CL/root/jobs")" ] || fail "the epilog left $(ls -A "$CL/root/jobs")"
pass "user-made, linked and world-writable-parent job_roots refused on the nodes; the victim is unchanged"
