# Sourced by test_liveness.sh (mpirun) and test_srun.sh (srun on the test cluster): a rank is stopped,
# killed or diverges, and the whole job must end, every rank with it, within COLL_STALL_ABORT_SEC + 10 s,
# with a message naming the rank. Needs BIN (mpi-env.sh); the caller exports COLL_STALL_ABORT_SEC, and
# COLL_TEST_TMP where the ranks do not share /tmp (the rank pid files go there).

# Seconds since the epoch, fractional.
now() { date +%s.%N; }

# live_ranks DIR: the pids of DIR/rank.* that still exist as processes (not zombies).
live_ranks() {
    local f pid state
    for f in "$1"/rank.*; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || continue
        [ "$state" = Z ] || echo "$pid"
    done
}

# job_ends JOBPID T0 OUT: waits for the launcher to end at most COLL_STALL_ABORT_SEC + 10 s after T0;
# fails if it does not, or exits 0, or leaves a rank behind.
job_ends() {
    local job=$1 t0=$2 out=$3 dir limit rc=0 pids
    dir=$(dirname "$out")
    limit=$(awk -v a="$COLL_STALL_ABORT_SEC" 'BEGIN { print a + 10 }')
    while kill -0 "$job" 2>/dev/null; do
        if awk -v t0="$t0" -v now="$(now)" -v l="$limit" 'BEGIN { exit !(now - t0 > l) }'; then
            cat "$out"
            pids=$(live_ranks "$dir")
            # shellcheck disable=SC2086
            [ -z "$pids" ] || { kill -CONT $pids; kill -KILL $pids; } 2>/dev/null
            kill -KILL "$job" 2>/dev/null
            echo "FAIL: the job still runs ${limit} s after the fault"
            return 1
        fi
        sleep 0.2
    done
    wait "$job" || rc=$?
    cat "$out"
    printf 'the job ended %.1f s after the fault, exit status %d\n' "$(awk -v t0="$t0" -v now="$(now)" \
        'BEGIN { print now - t0 }')" "$rc"
    [ "$rc" -ne 0 ] || { echo "FAIL: the job exited 0 after the fault"; return 1; }
    sleep 1 # the launcher may return a moment before the last rank is reaped
    pids=$(live_ranks "$dir")
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        { kill -CONT $pids; kill -KILL $pids; } 2>/dev/null
        echo "FAIL: ranks left running after the job ended: $pids"
        return 1
    fi
}

# fault_case SIGNAL VICTIM PATTERN LAUNCHER...: test_faults loop under LAUNCHER with 2 ranks; once both run,
# SIGNAL goes to rank VICTIM; the output must match PATTERN (an ERE).
fault_case() {
    local sig=$1 victim=$2 pattern=$3 dir job i
    shift 3
    dir=$(mktemp -d "${COLL_TEST_TMP:-/tmp}/coll-liveness.XXXXXX")
    chmod 0777 "$dir"
    echo "== $sig on rank $victim: $*"
    "$@" "$BIN/test_faults" loop "$dir" >"$dir/out" 2>&1 &
    job=$!
    for i in $(seq 300); do
        [ -s "$dir/rank.0" ] && [ -s "$dir/rank.1" ] && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.1
    done
    [ -s "$dir/rank.$victim" ] || { cat "$dir/out"; echo "FAIL: the ranks did not start"; return 1; }
    sleep 1 # a few hundred steps in
    kill "-$sig" "$(cat "$dir/rank.$victim")"
    job_ends "$job" "$(now)" "$dir/out" || return 1
    grep -Eq -- "$pattern" "$dir/out" || { echo "FAIL: no line matching '$pattern'"; return 1; }
    rm -rf "$dir"
}

# diverge_case LAUNCHER...: the last rank finalizes while rank 0 calls an allreduce.
diverge_case() {
    local dir job
    dir=$(mktemp -d "${COLL_TEST_TMP:-/tmp}/coll-liveness.XXXXXX")
    echo "== diverged collectives: $*"
    "$@" "$BIN/test_faults" diverge >"$dir/out" 2>&1 &
    job=$!
    job_ends "$job" "$(now)" "$dir/out" || return 1
    # The rank whose announcement the coordinator read first is named first: either may be.
    grep 'collective #1 differs across ranks: .*; aborting the job' "$dir/out" |
        grep 'rank 0 called allreduce sum of 1 x float32 in host memory' | grep -q 'rank 1 called coll_finalize' ||
        { echo "FAIL: no mismatch message naming both ranks"; return 1; }
    rm -rf "$dir"
}

# The patterns each fault must print: a stopped rank is named by the rank that waits for it.
STOPPED_0='libcollective: stall: collective #[0-9]+ .*(for rank 0 to grant it|for rank 0, which)'
STOPPED_1='libcollective: stall: collective #[0-9]+ .*for rank 1(,| to grant it)'
