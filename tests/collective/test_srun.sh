#!/usr/bin/env bash
# libcollective under the real Slurm test cluster (contrib/localcluster: slurmctld + slurmd n1, n2 on this
# host): srun --mpi=pmix across the two nodes, one task per node and then two per node, so that rank, size
# and local rank come from Slurm/PMIx. The two nodes are one host (same host name and boot id), so
# test_collective asserts that coll_host_alloc's memory is node-shared across them, and private (with the
# same results) when COLL_HOST_ID differs per rank. Skipped when the cluster harness is not there.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
lc=contrib/localcluster/localcluster
[ -x "$lc" ] || { echo "SKIP(dep): contrib/localcluster not available"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP(root): contrib/localcluster needs root"; exit 77; }
dir=$(mktemp -d /tmp/coll-srun.XXXXXX)
trap '"$lc" stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
"$lc" start "$dir"
. "$dir/env"
srun --mpi=list 2>&1 | grep -q pmix || { echo "SKIP(dep): this Slurm has no pmix MPI plugin"; exit 77; }
# Two slurmd on one host: Open MPI's shared-memory transport would see peers it cannot map (see
# docs/architecture.md), so ranks talk over TCP.
export OMPI_MCA_btl=self,tcp
export COLL_FUSION_THRESHOLD=256K
echo "== srun --mpi=pmix -N 2 -n 2 (one task per node)"
srun --mpi=pmix -N 2 -n 2 --ntasks-per-node=1 -t 5 "$BIN/test_collective"
echo "== srun --mpi=pmix -N 2 -n 4 (two tasks per node)"
srun --mpi=pmix -N 2 -n 4 --ntasks-per-node=2 -t 5 "$BIN/test_collective"
echo "== srun --mpi=pmix -N 2 -n 2, a different COLL_HOST_ID per rank: private memory, through MPI"
TEST_SHM_PRIVATE=1 TEST_CTL_PRIVATE=1 srun --mpi=pmix -N 2 -n 2 --ntasks-per-node=1 -t 5 \
    sh -c 'COLL_HOST_ID=host-$SLURM_PROCID exec "$0"' "$BIN/test_collective"
echo "== srun without PMI must refuse, not train alone"
rc=0
srun --mpi=none -N 2 -n 2 -t 5 "$BIN/test_faults" nodevice >"$dir/nopmi.log" 2>&1 || rc=$?
cat "$dir/nopmi.log"
[ "$rc" -ne 0 ] && grep -q "without PMI" "$dir/nopmi.log" || { echo "FAIL: srun --mpi=none was not refused"; exit 1; }

# Liveness under srun (tests/collective/liveness.sh): Slurm does not end a step when one task dies
# (KillOnBadExit=0), so here libcollective's watchdog alone must end the job.
. tests/collective/liveness.sh
export COLL_STALL_ABORT_SEC=5 COLL_STALL_WARNING_SEC=2
SRUN2=(srun --mpi=pmix -N 2 -n 2 --ntasks-per-node=1 -t 5)
fault_case STOP 0 "$STOPPED_0" "${SRUN2[@]}"
fault_case STOP 1 "$STOPPED_1" "${SRUN2[@]}"
fault_case KILL 1 "$STOPPED_1" "${SRUN2[@]}"
diverge_case "${SRUN2[@]}"
