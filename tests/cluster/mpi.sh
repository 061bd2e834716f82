#!/usr/bin/env bash
# An MPI job over the two nodes: customMpiSettings runs a small MPI program under srun --mpi=pmix;
# both ranks see a world of 2 and the allreduce sums across nodes.
. "$(dirname "$0")/lib.sh"
command -v mpicc >/dev/null || skip "mpicc is not installed (libopenmpi-dev)"
cluster_start
srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix MPI plugin here"
cat >"$WORK/allreduce.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int rank, size, sum = 0;
    char node[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const char *n = getenv("SLURMD_NODENAME");
    printf("rank %d of %d on %s sum %d task_index %s\n", rank, size, n ? n : "?", sum,
           getenv("AZ_BATCHAI_TASK_INDEX") ? getenv("AZ_BATCHAI_TASK_INDEX") : "unset");
    MPI_Finalize();
    return 0;
}
C
mpicc -O1 -o "$WORK/allreduce" "$WORK/allreduce.c"
chown "$TEST_USER:" "$WORK/allreduce"
write_job mpi.json <<JSON
{"properties": {"nodeCount": 2,
  "customMpiSettings": {"commandLine": "$WORK/allreduce", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "environmentVariables": [{"name": "OMPI_MCA_btl", "value": "self,tcp"}],
  "constraints": {"maxWallClockTime": "0.00:05:00"}}}
JSON
id=$(submit --batchai-job=mpi.json)
st=$(wait_job "$id")
logs=$(log_dir "$id" mpi)
[ "$st" = COMPLETED ] || fail "MPI job $id ended $st: $(cat "$logs/stderr.txt")"
assert_grep "rank 0 of 2 on n1 sum 3 task_index 0" "$logs/stdout.txt"
assert_grep "rank 1 of 2 on n2 sum 3 task_index 1" "$logs/stdout.txt"
assert_nodes_idle
pass "MPI allreduce over n1 and n2 under srun --mpi=pmix"
