/* Does a translated job fit the partition it asks for? Answered as the cluster will answer it, at submission:
 * a job asking for more nodes than its partition has, or more tasks than its CPUs, is accepted by slurmctld
 * on some releases and then waits for ever (Reason PartitionConfig), and refused by others with "Node count
 * specification invalid" or "Requested node configuration is not available", which name neither the
 * partition nor its size. batchai-job validate and submit ask slurmctld here (scontrol -o show partition) and
 * name both, with the job file's field. */
#ifndef BAI_PARTITION_FIT_H
#define BAI_PARTITION_FIT_H

#include "jobfile/batchai_jobfile.h"

#include <stdbool.h>
#include <stddef.h>

/* One partition's size, from `scontrol -o show partition`; -1: no bound (UNLIMITED) or not said. */
struct bai_partition {
    char name[256];
    long total_nodes, max_nodes, total_cpus;
};

/* Read partition `name` (NULL: Slurm's default one) into p. Returns 0, 1 when there is no such partition, -1
 * when Slurm cannot be asked (no scontrol, no slurmctld). */
int bai_partition_read(const char *name, struct bai_partition *p);

/* Why a job of `nodes` nodes and `tasks` tasks can never start on p, into why (one sentence naming the
 * partition's size); false when it fits. */
bool bai_partition_too_small(const struct bai_partition *p, long nodes, long tasks, char *why, size_t size);

/* Add a fault to d for each way the plan cannot fit its partition (the plan's, else Slurm's default one).
 * Nothing when Slurm cannot be asked (no scontrol, no slurmctld): sbatch answers then. */
void bai_partition_fit(const struct bai_plan *plan, struct bai_diag *d);

#endif
