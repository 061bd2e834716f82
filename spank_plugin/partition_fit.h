/* Does a translated job fit the partition it asks for? Answered as the cluster will answer it, at submission:
 * a job asking for more nodes than its partition has, or more tasks than its CPUs, is accepted by slurmctld
 * on some releases and then waits for ever (Reason PartitionConfig), and refused by others with "Node count
 * specification invalid" or "Requested node configuration is not available", which name neither the
 * partition nor its size. batchai-job validate and submit ask slurmctld here (scontrol -o show partition) and
 * name both, with the job file's field. */
#ifndef BAI_PARTITION_FIT_H
#define BAI_PARTITION_FIT_H

#include "diag.h"
#include "plan.h"

/* Add a fault to d for each way the plan cannot fit its partition (the plan's, else Slurm's default one).
 * Nothing when Slurm cannot be asked (no scontrol, no slurmctld): sbatch answers then. */
void bai_partition_fit(const struct bai_plan *plan, struct bai_diag *d);

#endif
