#!/usr/bin/env bash
# libcollective correctness on real ranks: mpirun -np 1, 2, 3, 4, and one process without any launcher.
# A fusion threshold of 256 KiB makes the test's small tensors fuse (into buffers big enough for Open MPI
# to switch algorithm, which is what would break bit-identity) while its 400 KB tensors stay far above it.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
export COLL_FUSION_THRESHOLD=256K
# A lost wake-up between the ranks' processes (the ragged test) ends as a stall message, not a hang.
export COLL_STALL_ABORT_SEC=30
for np in 1 2 3 4; do
    echo "== mpirun -np $np"
    "${MPIRUN[@]}" -np "$np" "$BIN/test_collective"
done
echo "== single process, no launcher"
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u SLURM_STEP_NUM_TASKS "$BIN/test_collective"
echo "== fusion disabled (COLL_FUSION_THRESHOLD=0), 3 ranks"
COLL_FUSION_THRESHOLD=0 "${MPIRUN[@]}" -np 3 "$BIN/test_collective"
echo "== coll_host_alloc: nothing of libcollective's is left in /dev/shm"
left=$(find /dev/shm -maxdepth 1 -name 'libcollective.*' -user "$(id -u)")
[ -z "$left" ] || { echo "FAIL: left in /dev/shm: $left"; exit 1; }
echo "== COLL_SHM=0, 2 ranks on one host: coll_host_alloc's memory is private, its allreduces go through MPI"
COLL_SHM=0 "${MPIRUN[@]}" -np 2 "$BIN/test_collective"
echo "== COLL_SHM=0 on rank 1 only: every rank coordinates through MPI messages, with private memory (rank 0"
echo "   must not wait for the others in coll_init's agreement)"
TEST_SHM_PRIVATE=1 TEST_CTL_PRIVATE=1 "${MPIRUN[@]}" -np 1 "$BIN/test_collective" : -np 1 env COLL_SHM=0 \
    "$BIN/test_collective"
echo "== a different COLL_HOST_ID per rank, 2 ranks on one host: told they are on two hosts, they take private"
echo "   memory and MPI (the test asserts which), with the same results"
TEST_SHM_PRIVATE=1 TEST_CTL_PRIVATE=1 "${MPIRUN[@]}" -np 2 sh -c 'COLL_HOST_ID=host-$OMPI_COMM_WORLD_RANK exec "$0"' \
    "$BIN/test_collective"
echo "== 3 ranks, each told it is a host of its own: the exchanges go in pieces (unequal chunks), same results"
TEST_SHM_PRIVATE=1 TEST_CTL_PRIVATE=1 "${MPIRUN[@]}" -np 3 sh -c 'COLL_HOST_ID=host-$OMPI_COMM_WORLD_RANK exec "$0"' \
    "$BIN/test_collective"
echo "== pieces forced on one host (COLL_WIRE_PIECES=1), 16 to 64 MiB: over shared memory each piece is a"
echo "   rendezvous whose acknowledgement a rank may still owe when its requests are complete, and its progress"
echo "   thread then sleeps without calling MPI; without the window of pieces in flight, hundreds owed at once"
echo "   hung the peer (ended here by the stall abort)"
out=$(COLL_WIRE_PIECES=1 COLL_STALL_ABORT_SEC=20 "${MPIRUN[@]}" -np 2 "$BUILD/bin/coll-bench" -b 16M -e 64M -n 10 -w 3 \
    --rounds 1 2>&1) || { echo "$out"; echo "FAIL: pieces on one host"; exit 1; }
echo "$out"
awk '$1 ~ /^[0-9]+$/ { rows++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit !(rows == 3 && !bad) }' <<<"$out" ||
    { echo "FAIL: pieces on one host: not 3 rows, or elements that differ"; exit 1; }
echo "== COLL_WIRE_PIECES=2 is refused, naming the variable"
out=$(COLL_WIRE_PIECES=2 "${MPIRUN[@]}" -np 1 "$BIN/test_collective" 2>&1) && { echo "$out"; echo "FAIL: accepted"; exit 1; }
grep -q "COLL_WIRE_PIECES='2' must be auto, 1 or 0" <<<"$out" || { echo "$out"; echo "FAIL: no message"; exit 1; }
echo "== the same COLL_HOST_ID on every rank: one host, node-shared"
COLL_HOST_ID=one-host "${MPIRUN[@]}" -np 2 "$BIN/test_collective"
echo "== rank 1 cannot have node-shared memory (its /dev/shm a read-only tmpfs): at coll_init, every rank falls"
echo "   back to MPI messages and private memory"
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    out=$(TEST_SHM_PRIVATE=1 TEST_CTL_PRIVATE=1 OMPI_MCA_btl=self,tcp "${MPIRUN[@]}" -np 1 "$BIN/test_collective" : -np 1 \
        unshare -m sh -c 'mount -t tmpfs -o ro tmpfs /dev/shm && exec "$0"' "$BIN/test_collective" 2>&1)
    echo "$out"
    grep -q 'libcollective: rank 1: no node-shared memory for the control block (creating /libcollective\..*\.ctl\.1: Read-only file system); the ranks of this host coordinate and reduce through MPI' <<<"$out" ||
        { echo "FAIL: rank 1 did not say why it has no node-shared memory"; exit 1; }
    echo "== a full /dev/shm (both ranks in a mount namespace whose /dev/shm is a 256 KiB tmpfs): the control"
    echo "   blocks fit, coll_host_alloc is refused with ENOSPC and every rank falls back to MPI for it (a SIGBUS"
    echo "   at first touch before)"
    out=$(TEST_SHM_PRIVATE=1 OMPI_MCA_btl=self,tcp unshare -m sh -c \
        'mount -t tmpfs -o size=256k tmpfs /dev/shm && exec "$@"' sh "${MPIRUN[@]}" -np 2 "$BIN/test_collective" 2>&1)
    echo "$out"
    grep -q 'no node-shared memory for coll_host_alloc #0 (creating /libcollective\..*: No space left on device); its allreduces go through MPI' <<<"$out" ||
        { echo "FAIL: no rank said that /dev/shm is full"; exit 1; }
else
    echo "(not root: a private mount namespace needs root; the read-only and full /dev/shm cases are left out)"
fi
