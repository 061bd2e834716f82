#!/usr/bin/env bash
# libcollective faults on real ranks: stall warning naming the late rank (a worker, and rank 0 itself),
# stall abort, checked-mode mismatches, and asking for a GPU where there is none.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
out=$(mktemp)
trap 'rm -f "$out"' EXIT

expect() { # expect FILE PATTERN
    grep -E -- "$2" "$1" >/dev/null || { echo "FAIL: no line matching '$2' in:"; cat "$1"; exit 1; }
}

echo "== stall: rank 1 of 2 sleeps 3 s, warning after 1 s"
COLL_STALL_WARNING_SEC=1 "${MPIRUN[@]}" -np 2 "$BIN/test_faults" stall 1 >"$out" 2>&1
cat "$out"
expect "$out" "libcollective: stall: collective #0 \(allreduce sum of 3 x float32 in host memory\) has waited [0-9.]+ s for rank 1, which has not reached it"

echo "== stall: rank 0 of 3 (the coordinator's own program) sleeps"
COLL_STALL_WARNING_SEC=1 "${MPIRUN[@]}" -np 3 "$BIN/test_faults" stall 0 >"$out" 2>&1
cat "$out"
expect "$out" "stall: collective #0 .* for rank 0, which has not reached it"

echo "== stall abort after 2 s"
rc=0
COLL_STALL_WARNING_SEC=1 COLL_STALL_ABORT_SEC=2 timeout 100 "${MPIRUN[@]}" -np 2 "$BIN/test_faults" abort >"$out" 2>&1 ||
    rc=$?
cat "$out"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: expected the job to abort itself, exit status $rc"; exit 1; }
expect "$out" "stall: collective #0 .* for rank 1, which has not reached it; aborting the job"

for np in 2 3; do
    echo "== checked mode, COLL_MISMATCH_ABORT=0: mismatches across $np ranks fail the call"
    COLL_MISMATCH_ABORT=0 "${MPIRUN[@]}" -np "$np" "$BIN/test_faults" mismatch
done

echo "== a malformed setting is refused by name"
alone=(env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK)
"${alone[@]}" COLL_FUSION_THRESHOLD=12Q "$BIN/test_faults" badenv "COLL_FUSION_THRESHOLD='12Q'"
"${alone[@]}" COLL_HOST_ID= "$BIN/test_faults" badenv "COLL_HOST_ID is set but empty"
"${alone[@]}" COLL_HOST_ID="$(printf 'h%.0s' $(seq 256))" "$BIN/test_faults" badenv \
    "COLL_HOST_ID is 256 bytes long, at most 255"

echo "== use_device=1 without a GPU, then host only (2 ranks, and one process without a launcher)"
"${MPIRUN[@]}" -np 2 "$BIN/test_faults" nodevice | tee "$out"
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK "$BIN/test_faults" nodevice
# With the NCCL plugin built and no GPU, the refusal must say so (not that the plugin is missing).
if [ -n "${COLL_NCCL_LIBRARY:-}" ] && ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    expect "$out" "use_device=1 refused: .*no CUDA device is visible on rank [01]"
fi
