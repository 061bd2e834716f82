#!/usr/bin/env bash
# Liveness on real ranks under mpirun, both as on separate hosts (MPI messages) and as ranks of one host
# (the node-shared control block): SIGSTOP on rank 0, SIGSTOP on rank 1, SIGKILL on one rank, and ranks
# whose collectives diverge each end the whole job, every rank with a non-zero exit, within
# COLL_STALL_ABORT_SEC + 10 s, with a message naming the rank (tests/collective/liveness.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
. tests/collective/liveness.sh
export COLL_STALL_ABORT_SEC=5 COLL_STALL_WARNING_SEC=2
# Ranks as on separate hosts (COLL_SHM=0: rank 0's coordinator over MPI messages, collectives in MPI).
COLL_SHM=0 fault_case STOP 0 "$STOPPED_0" "${MPIRUN[@]}" -np 2
COLL_SHM=0 fault_case STOP 1 "$STOPPED_1" "${MPIRUN[@]}" -np 2
# mpirun notices a dead rank itself and names it.
COLL_SHM=0 fault_case KILL 1 'rank 1 .*exited on signal 9|libcollective: stall: .*rank 1' "${MPIRUN[@]}" -np 2
COLL_SHM=0 diverge_case "${MPIRUN[@]}" -np 2
# Ranks of one host: they coordinate through the node-shared control block and sleep on its bells (with
# private gradients, reduced in MPI; with node-shared ones, TEST_LOOP_SHARED=1), and the watchdog must
# still end the job naming the rank.
fault_case STOP 0 "$STOPPED_0" "${MPIRUN[@]}" -np 2
TEST_LOOP_SHARED=1 fault_case STOP 1 "$STOPPED_1" "${MPIRUN[@]}" -np 2
TEST_LOOP_SHARED=1 fault_case KILL 0 'rank 0 .*exited on signal 9|libcollective: stall: .*rank 0' "${MPIRUN[@]}" -np 2
diverge_case "${MPIRUN[@]}" -np 2
echo "PASS: test_liveness"
