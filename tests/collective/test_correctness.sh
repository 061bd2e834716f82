#!/usr/bin/env bash
# libcollective correctness on real ranks: mpirun -np 1, 2, 3, 4, and one process without any launcher.
# A fusion threshold of 256 KiB makes the test's small tensors fuse (into buffers big enough for Open MPI
# to switch algorithm, which is what would break bit-identity) while its 400 KB tensors stay far above it.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
export COLL_FUSION_THRESHOLD=256K
for np in 1 2 3 4; do
    echo "== mpirun -np $np"
    "${MPIRUN[@]}" -np "$np" "$BIN/test_collective"
done
echo "== single process, no launcher"
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u SLURM_STEP_NUM_TASKS "$BIN/test_collective"
echo "== fusion disabled (COLL_FUSION_THRESHOLD=0), 3 ranks"
COLL_FUSION_THRESHOLD=0 "${MPIRUN[@]}" -np 3 "$BIN/test_collective"
