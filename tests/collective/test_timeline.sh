#!/usr/bin/env bash
# COLL_TIMELINE on real ranks under mpirun: rank 0's Chrome trace-event file is read back with Python's
# json module (tests/collective/timeline_check.py) after a normal exit (ranks of one host: the control
# block carries the other rank's records; as on separate hosts, COLL_SHM=0: READY messages do; 3 ranks;
# one process without a launcher), after
# SIGTERM to rank 0, after SIGKILL of rank 1, after a stall the watchdog aborts (whose reason must be the
# file's last event), and at the size cap (its marker the last event, the file under the cap). An
# unwritable path fails coll_init on every rank, naming the file.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
. tests/collective/liveness.sh
PY=/usr/bin/python3
"$PY" -c 'import json' 2>/dev/null || { echo "SKIP(dep): $PY with its json module is needed to read the timeline"; exit 77; }
CHECK=(env "$PY" tests/collective/timeline_check.py)
dir=$(mktemp -d /tmp/coll-timeline.XXXXXX)
chmod 0777 "$dir"
trap 'rm -rf "$dir"' EXIT
export COLL_STALL_ABORT_SEC=5 COLL_STALL_WARNING_SEC=0

for shm in 1 0; do
    echo "== normal exit, 2 ranks, COLL_SHM=$shm: 30 steps"
    COLL_SHM=$shm COLL_TIMELINE=$dir/normal.json "${MPIRUN[@]}" -np 2 "$BIN/test_timeline" steps 30
    "${CHECK[@]}" "$dir/normal.json" --ranks 2 --steps 30
done
echo "== one process without a launcher (collectives run in the caller's thread)"
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK COLL_TIMELINE="$dir/one.json" "$BIN/test_timeline" steps 5
"${CHECK[@]}" "$dir/one.json" --ranks 1 --steps 5
echo "== normal exit, 3 ranks"
COLL_TIMELINE=$dir/three.json "${MPIRUN[@]}" -np 3 "$BIN/test_timeline" steps 10
"${CHECK[@]}" "$dir/three.json" --ranks 3 --steps 10

# fault SIGNAL VICTIM FILE ENV...: test_timeline loop with 2 ranks; once both run and a few flushes have
# been written, SIGNAL goes to rank VICTIM (none: the script waits for the job to end by itself).
fault() {
    local sig=$1 victim=$2 file=$3 job
    shift 3
    rm -f "$dir"/rank.*
    echo "== $sig on rank $victim ($*)"
    env "$@" COLL_TIMELINE="$file" "${MPIRUN[@]}" -np 2 "$BIN/test_timeline" loop "$dir" >"$dir/out" 2>&1 &
    job=$!
    for _ in $(seq 300); do
        [ -s "$dir/rank.0" ] && [ -s "$dir/rank.1" ] && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.1
    done
    [ -s "$dir/rank.1" ] || { cat "$dir/out"; echo "FAIL: the ranks did not start"; return 1; }
    if [ "$sig" != none ]; then
        sleep 2 # some steps, several flushes
        kill "-$sig" "$(cat "$dir/rank.$victim")"
    fi
    job_ends "$job" "$(now)" "$dir/out"
}

fault TERM 0 "$dir/term.json" COLL_SHM=1
"${CHECK[@]}" "$dir/term.json" --ranks 2 --min-steps 3
fault KILL 1 "$dir/kill.json" COLL_SHM=1
"${CHECK[@]}" "$dir/kill.json" --ranks 2 --min-steps 3
# Rank 1 stops calling collectives after 40 steps: rank 0's watchdog aborts the job, and writes why
# first. (COLL_SHM=0: only rank 0 coordinates, so it is rank 0 that notices; on one host either may.)
fault none 1 "$dir/stall.json" COLL_SHM=0 TEST_SLEEP_AFTER=40
grep -q 'stall: collective #.*aborting the job' "$dir/out" || { echo "FAIL: no stall abort"; exit 1; }
"${CHECK[@]}" "$dir/stall.json" --ranks 2 --min-steps 39 --marker 'stall: collective #480 .* aborting the job' \
    --last-marker

echo "== size cap: COLL_TIMELINE_MAX_MB=0.1, 60 steps (about 1 MB of events)"
COLL_TIMELINE=$dir/cap.json COLL_TIMELINE_MAX_MB=0.1 "${MPIRUN[@]}" -np 2 "$BIN/test_timeline" steps 60
"${CHECK[@]}" "$dir/cap.json" --ranks 2 --min-steps 3 --cap 104858 \
    --marker '^timeline size cap reached \(COLL_TIMELINE_MAX_MB=0.1\): nothing more is recorded$' --last-marker

echo "== an unwritable COLL_TIMELINE fails coll_init on every rank, naming the file"
COLL_TIMELINE=$dir/no-such-dir/t.json "${MPIRUN[@]}" -np 2 "$BIN/test_timeline" refused \
    "COLL_TIMELINE=$dir/no-such-dir/t.json: cannot open the timeline file: No such file or directory" | tee "$dir/out"
[ "$(grep -c '^refused: ' "$dir/out")" = 2 ] || { echo "FAIL: not every rank refused"; exit 1; }
grep -q '^refused: libcollective: rank 0 cannot write its timeline file' "$dir/out" ||
    { echo "FAIL: rank 1 does not say that rank 0 could not write the timeline"; exit 1; }
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK COLL_TIMELINE="$dir" COLL_SHM=1 "$BIN/test_timeline" refused \
    "COLL_TIMELINE=$dir: cannot open the timeline file: Is a directory"
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK COLL_TIMELINE="$dir/t.json" COLL_TIMELINE_MAX_MB=0 \
    "$BIN/test_timeline" refused "COLL_TIMELINE_MAX_MB='0' must be more than 0"
echo "PASS: test_timeline"
