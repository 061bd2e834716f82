#!/usr/bin/env bash
# Liveness on real ranks under mpirun: SIGSTOP on rank 0, SIGSTOP on rank 1 (with private and with
# node-shared gradients), SIGKILL on rank 1, and ranks whose collectives diverge each end the whole job,
# every rank with a non-zero exit, within COLL_STALL_ABORT_SEC + 10 s, with a message naming the rank (tests/collective/liveness.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
. tests/collective/liveness.sh
export COLL_STALL_ABORT_SEC=5 COLL_STALL_WARNING_SEC=2
fault_case STOP 0 "$STOPPED_0" "${MPIRUN[@]}" -np 2
fault_case STOP 1 "$STOPPED_1" "${MPIRUN[@]}" -np 2
# mpirun notices a dead rank itself and names it.
fault_case KILL 1 'rank 1 .*exited on signal 9|libcollective: stall: .*rank 1' "${MPIRUN[@]}" -np 2
# The same stops while the gradients are node-shared (coll_host_alloc): the waiting rank naps on its
# peer's progress mark instead of inside MPI, and the watchdog must still end the job naming the rank.
TEST_LOOP_SHARED=1 fault_case STOP 0 "$STOPPED_0" "${MPIRUN[@]}" -np 2
TEST_LOOP_SHARED=1 fault_case STOP 1 "$STOPPED_1" "${MPIRUN[@]}" -np 2
diverge_case "${MPIRUN[@]}" -np 2
echo "PASS: test_liveness"
