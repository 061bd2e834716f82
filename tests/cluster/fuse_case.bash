# Sourced by hostile_fuse.sh and hostile_fuse_task.sh (not a test: the runner takes *.sh only): a cluster,
# and hang_case, which makes a job's file a FUSE file system whose reads never answer (fuse_hang.c).
. "$(dirname "$0")/lib.sh"
FUSE=$BUILD/tests/fuse_hang
[ -x "$FUSE" ] || skip "$FUSE is not built"
[ -c /dev/fuse ] || skip "no /dev/fuse on this host"
cluster_start
FUSE_PID=""
fuse_stop() {
    if [ -n "$FUSE_PID" ]; then
        kill "$FUSE_PID" 2>/dev/null || true
        wait "$FUSE_PID" 2>/dev/null || true
        on_host n1 umount "$WORK/f" 2>/dev/null || on_host n1 umount -l "$WORK/f" 2>/dev/null || true
    fi
}
# On any exit: the file system first (nothing can be removed under it), then the cluster, with the status.
fuse_then_cluster_stop() {
    local rc=$?
    set +e
    fuse_stop
    (exit $rc)
    cluster_stop
}
trap fuse_then_cluster_stop EXIT
# fuse_job CONTENT: submit a job from f/job.json held, put the FUSE file system over f (serving the file's
# bytes to the first open when CONTENT=first), release it and wait for its end, all while the FUSE server
# still holds its readers stuck. Sets ID, ST (its state), TOOK (seconds) and ERR (its stderr.txt). The file
# has a secret: such a file travels without its bytes (no snapshot), so the prolog reads it from its path.
# The job runs on n1, and the file system is mounted there (in hosts mode n1 has a mount namespace of its
# own, which a mount made here would not reach).
fuse_job() {
    local content=$1 start
    fuse_stop
    FUSE_PID=""
    as_user "rm -rf f && mkdir f"
    write_job f/job.json <<JSON
{"properties": {"nodeCount": 1, $LOGS_JSON, $MOUNT_JSON,
  "customToolkitSettings": {"commandLine": "echo main-ran"}, "secrets": [{"name": "TOKEN", "value": "tok"}]}}
JSON
    cp "$WORK/f/job.json" "$CL/content.json"
    ID=$(submit --batchai-job=f/job.json --hold --nodelist=n1)
    : >"$CL/fuse.out"
    # Not through on_host, a function: FUSE_PID must be the server's own pid (hostnet execs it).
    local on_n1=()
    [ -z "${BATCHAI_HOSTS_SET:-}" ] || on_n1=("$HOSTNET" exec "$BATCHAI_HOSTS_SET" n1)
    "${on_n1[@]}" "$FUSE" "$WORK/f" "$TEST_UID" "$(id -g "$TEST_USER")" ${content:+"$CL/content.json"} >"$CL/fuse.out" 2>&1 &
    FUSE_PID=$!
    for i in $(seq 50); do grep -q mounted "$CL/fuse.out" && break; sleep 0.1; done
    grep -q mounted "$CL/fuse.out" || skip "cannot mount a FUSE file system here: $(cat "$CL/fuse.out")"
    on_host n1 runuser -u "$TEST_USER" -- stat -c %U "$WORK/f/job.json" | grep -q "$TEST_USER" ||
        fail "the FUSE job file is not there"
    start=$(date +%s)
    scontrol release "$ID"
    ST=$(wait_job "$ID" 120)
    TOOK=$(($(date +%s) - start))
    ERR=$(find "$SHARE/logs" -path "*/$ID/stdouterr/stderr.txt" -print -quit)
    [ -n "$ERR" ] || fail "job $ID has no stderr.txt: the prolog left no time to make its log directory"
}
# assert_no_drain: both nodes idle, and no task that could not be killed, whatever readers the FUSE server holds.
assert_no_drain() {
    assert_nodes_idle
    ! grep -h "Kill task failed\|drain" "$CL"/log/slurm*.log || fail "a node was drained or a task could not be killed"
}
# hang_case CONTENT WANT: fuse_job CONTENT; the job must fail with WANT in its stderr, nothing of it run.
hang_case() {
    fuse_job "$1"
    [ "$ST" = FAILED ] || fail "job $ID ended $ST"
    assert_grep "$2" "$ERR"
    ! grep -qs main-ran "$(dirname "$ERR")/stdout.txt" || fail "job $ID ran"
    assert_no_drain
    echo "job $ID: failed in $TOOK s: $(grep -m1 "took longer" "$ERR")"
}
