#!/usr/bin/env bash
# Azure ML's distribution: mpi on the two-node cluster, 2 nodes x 2 processes under srun --mpi=pmix: the
# command's shell sees OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK and _LOCAL_SIZE before MPI starts, as under
# Azure ML's mpirun, and a real Open MPI program started with them already set agrees with them after
# MPI_Init (rank, size, node-local rank and size) and sums across both nodes. Each node's execution log
# shows the main step, started and finished.
. "$(dirname "$0")/lib.sh"
command -v mpicc >/dev/null || skip "mpicc is not installed (libopenmpi-dev)"
cluster_start
srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix MPI plugin here"
cat >"$WORK/ranks.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static const char *env(const char *name) { const char *v = getenv(name); return v ? v : "unset"; }
int main(int argc, char **argv)
{
    char before[160];
    int rank, size, local, local_size, sum = 0;
    MPI_Comm node;
    snprintf(before, sizeof before, "%s/%s local %s/%s", env("OMPI_COMM_WORLD_RANK"), env("OMPI_COMM_WORLD_SIZE"),
             env("OMPI_COMM_WORLD_LOCAL_RANK"), env("OMPI_COMM_WORLD_LOCAL_SIZE"));
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_size);
    int mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("mpi %d/%d local %d/%d sum %d env %s\n", rank, size, local, local_size, sum, before);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
C
mpicc -O1 -o "$WORK/ranks" "$WORK/ranks.c"
chown "$TEST_USER:" "$WORK/ranks"
write_job mpi.yml <<YAML
command: >-
  echo "shell \$OMPI_COMM_WORLD_RANK/\$OMPI_COMM_WORLD_SIZE local \$OMPI_COMM_WORLD_LOCAL_RANK/\$OMPI_COMM_WORLD_LOCAL_SIZE on \$SLURMD_NODENAME" &&
  $WORK/ranks
environment_variables:
  OMPI_MCA_btl: self,tcp
distribution:
  type: mpi
  process_count_per_instance: 2
resources:
  instance_count: 2
limits:
  timeout: 120
YAML
id=$(submit --batchai-job=mpi.yml)
st=$(wait_job "$id" 100)
logs=$WORK/mpi/$id/stdouterr
[ "$st" = COMPLETED ] || fail "mpi.yml: job $id ended $st: $(tail -n 20 "$logs/stderr.txt" 2>&1)"
for r in 0 1 2 3; do
    node=n$((r / 2 + 1)) local=$((r % 2))
    assert_grep "^shell $r/4 local $local/2 on $node$" "$logs/stdout.txt"
    assert_grep "^mpi $r/4 local $local/2 sum 10 env $r/4 local $local/2$" "$logs/stdout.txt"
done
for n in n1 n2; do
    assert_grep " attempt 1: main step started$" "$logs/execution-$n.log"
    assert_grep " attempt 1: main step finished with exit code 0$" "$logs/execution-$n.log"
done
assert_nodes_idle
pass "distribution: mpi, 2x2 ranks: OMPI_COMM_WORLD_* set before MPI starts, Open MPI under pmix agrees with them; both nodes' execution logs show the main step"
