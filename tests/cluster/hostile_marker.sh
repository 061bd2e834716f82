#!/usr/bin/env bash
# The prolog's failure markers are root's alone: job_root is world-listable, and why a job failed is its
# user's business. A job whose file changes after submission makes the prolog write
# <job_root>/<jobid>.prolog-failed-<node> on both nodes; from the moment it appears until the epilog
# removes it, it is mode 0600 and root's, and the job's user (standing in for any other) cannot read it.
# (The tasks read markers while still root: hostile_job_root.sh and hostile_log_paths.sh see their reasons.)
# batchai-job status gives the user the reason the node's setup failed (its errors[], text and --json).
. "$(dirname "$0")/lib.sh"
cluster_start
job='{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "echo main-ran", "processCount": 2},
  '"$LOGS_JSON, $MOUNT_JSON"', "secrets": [{"name": "TOKEN", "value": "tok"}]}}'
write_job m.json <<<"$job"
id=$(submit --batchai-job=m.json --hold)
as_user "echo ' ' >>m.json"
seen=$CL/marker-seen
# Watch job_root as root while the job runs: the marker lives from the prolog to the epilog, a short
# window, so the watcher is a tight loop (python) that stats the marker and tries to read it as the user.
/usr/bin/python3 - "$CL/jobs" "$id" "$TEST_UID" "$(id -g "$TEST_USER")" >"$seen" 2>&1 <<'PY' &
import os, sys, time
jobs, jobid, uid, gid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
end = time.monotonic() + 60
while time.monotonic() < end:
    for name in os.listdir(jobs):
        if not name.startswith(jobid + ".prolog-failed-"):
            continue
        try:
            st = os.stat(os.path.join(jobs, name))
        except FileNotFoundError:
            continue
        print("%o %s" % (st.st_mode & 0o7777, "root" if st.st_uid == 0 else st.st_uid), flush=True)
        pid = os.fork()
        if pid == 0:
            os.setgroups([]); os.setgid(gid); os.setuid(uid)
            try:
                open(os.path.join(jobs, name)).read(); print("READ-BY-USER")
            except OSError as e:
                print("user cannot read it:", e.strerror)
            sys.stdout.flush(); os._exit(0)
        os.waitpid(pid, 0)
        sys.exit(0)
PY
watcher=$!
scontrol release "$id"
st=$(wait_job "$id" 60)
wait "$watcher" || true
[ "$st" = FAILED ] || fail "job $id ended $st"
assert_grep "the file changed after it was submitted" "$(log_dir "$id" m)/stderr.txt"
# The user reads the reason where they look, not only in stderr.txt: batchai-job status, text and --json.
install -m 0755 "$BUILD/bin/batchai-job" "$CL/batchai-job" # the user may not reach the build tree
st=$(as_user "$CL/batchai-job status $id" 2>&1) && fail "status of the failed job $id exited 0: $st"
grep -q '^error: *JobNodeError: .*the file changed after it was submitted' <<<"$st" ||
    fail "status of job $id does not give the node's reason: $st (stderr.txt: $(cat "$(log_dir "$id" m)/stderr.txt"))"
js=$(as_user "$CL/batchai-job status $id --json" 2>&1) || true
/usr/bin/python3 -c '
import json, sys
errs = json.load(sys.stdin)["executionInfo"]["errors"]
sys.exit(0 if any(e["code"] == "JobNodeError" and "the file changed after it was submitted" in e["message"]
                  and not e["message"].startswith("slurmstepd") for e in errs) else 1)' <<<"$js" ||
    fail "status --json of job $id has no JobNodeError with the reason: $js"
echo "status of the job whose file changed:"; sed 's/^/    /' <<<"$st"
[ -s "$seen" ] || fail "the watcher never saw a marker of job $id (the test could not look)"
[ "$(head -n 1 "$seen")" = "600 root" ] || fail "the marker was $(head -n 1 "$seen"), want 600 root"
! grep -q READ-BY-USER "$seen" || fail "a user read the marker: $(cat "$seen")"
assert_nodes_idle
pass "job $id's failure markers were 0600 root's, unreadable by users"
