#!/usr/bin/env bash
# libcollective with ranks on several hosts: the hierarchical allreduce (per host in node-shared memory,
# then the hosts' leaders over MPI), float16 compression across hosts, and the flat path they replace.
# test_hier checks which path was chosen and that every result is, bit for bit on every rank, the sum in
# the order the README promises for it; test_collective's whole suite runs across the hosts; a killed and
# a stopped rank end the job naming the rank.
# First as hosts told apart by COLL_HOST_ID on this machine (no root needed), then, as root, on hosts that
# are separate network hosts (contrib/localcluster/hostnet through tests/collective/mpirun-hosts.sh:
# own network, UTS and mount namespaces, TCP between them).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
. tests/collective/liveness.sh
BIN=$(cd "$BIN" && pwd -P)
export COLL_STALL_ABORT_SEC=60
export TEST_HOSTS=2

# cases LAUNCHER...: test_hier under LAUNCHER (2 hosts x 2 ranks) in each mode.
cases() {
    echo "== hierarchical (default): $*"
    TEST_HIER=1 "$@" "$BIN/test_hier"
    echo "== flat (COLL_HIERARCHICAL=0): $*"
    COLL_HIERARCHICAL=0 TEST_HIER=0 "$@" "$BIN/test_hier"
    echo "== hierarchical, float16 across hosts (COLL_COMPRESS=fp16): $*"
    COLL_COMPRESS=fp16 TEST_FP16=1 TEST_HIER=1 "$@" "$BIN/test_hier"
    echo "== flat, float16 between all ranks: $*"
    COLL_COMPRESS=fp16 COLL_HIERARCHICAL=0 TEST_FP16=1 TEST_HIER=0 "$@" "$BIN/test_hier"
}

echo "== COLL_COMPRESS=fp16 with every rank on one host: nothing crosses hosts, nothing is compressed"
COLL_COMPRESS=fp16 TEST_HOSTS=1 "${MPIRUN[@]}" -np 2 "$BIN/test_hier"
echo "== COLL_COMPRESS=fp16 on rank 1 only: coll_init fails on both, naming the setting and the ranks"
out=$("${MPIRUN[@]}" -np 1 "$BIN/test_faults" badenv "rank 0 has none, rank 1 fp16" : -np 1 \
    env COLL_COMPRESS=fp16 "$BIN/test_faults" badenv "rank 0 has none, rank 1 fp16" 2>&1 || true)
echo "$out"
[ "$(grep -c 'test_faults badenv: passed' <<<"$out")" = 2 ] || { echo "FAIL: not refused on both ranks"; exit 1; }

# Two hosts of two ranks each by COLL_HOST_ID: node-shared memory on each, MPI (shared memory here) between.
cases "${MPIRUN[@]}" -np 4 sh -c 'COLL_HOST_ID=host-$((OMPI_COMM_WORLD_RANK / 2)) exec "$0"'

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then
    echo "(not root, or no ip/nsenter: the cases on separate network hosts are left out)"
    echo "PASS: test_hosts"
    exit 0
fi
set=ch$$
hosts=tests/collective/mpirun-hosts.sh
trap '"$hosts" down "$set"' EXIT
"$hosts" up "$set" 2
export OMPI_MCA_btl=self,vader,tcp # mpi-env.sh set shared memory alone
# The nodes have a /tmp of their own: the liveness cases' pid files go where every host sees them.
COLL_TEST_TMP=$(mktemp -d "$PWD/build/test-hosts.XXXXXX")
export COLL_TEST_TMP
trap '"$hosts" down "$set"; rm -rf "$COLL_TEST_TMP"' EXIT
cases "$hosts" run "$set" 2 --oversubscribe
echo "== one rank per host: flat (the hierarchy has nothing to gather), float16 between the hosts"
TEST_HIER=0 "$hosts" run "$set" 1 "$BIN/test_hier"
COLL_COMPRESS=fp16 TEST_FP16=1 TEST_HIER=0 "$hosts" run "$set" 1 "$BIN/test_hier"
echo "== test_collective's suite across 2 hosts x 2 ranks, hierarchical (MPI messages and private memory)"
TEST_SHM_PRIVATE=1 TEST_CTL_PRIVATE=1 COLL_FUSION_THRESHOLD=256K "$hosts" run "$set" 2 --oversubscribe \
    "$BIN/test_collective"
echo "== faults in the hierarchical allreduce, 2 hosts x 2 ranks"
export COLL_STALL_ABORT_SEC=5 COLL_STALL_WARNING_SEC=2
fault_case KILL 1 'rank 1 .*exited on signal 9|libcollective: stall: .*rank 1' "$hosts" run "$set" 2 --oversubscribe
fault_case STOP 1 "$STOPPED_1" "$hosts" run "$set" 2 --oversubscribe
echo "PASS: test_hosts"
