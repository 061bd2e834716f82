#!/usr/bin/env bash
# Liveness on real ranks under mpirun: SIGSTOP on rank 0, SIGSTOP on rank 1, SIGKILL on rank 1, and ranks
# whose collectives diverge each end the whole job, every rank with a non-zero exit, within
# COLL_STALL_ABORT_SEC + 10 s, with a message naming the rank (tests/collective/liveness.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
. tests/collective/liveness.sh
export COLL_STALL_ABORT_SEC=5 COLL_STALL_WARNING_SEC=2
fault_case STOP 0 "$STOPPED_0" "${MPIRUN[@]}" -np 2
fault_case STOP 1 "$STOPPED_1" "${MPIRUN[@]}" -np 2
# mpirun notices a dead rank itself and names it.
fault_case KILL 1 'rank 1 .*exited on signal 9|libcollective: stall: .*rank 1' "${MPIRUN[@]}" -np 2
diverge_case "${MPIRUN[@]}" -np 2
echo "PASS: test_liveness"
