/* Remote context, slurm_spank_task_exit: each failing task of a Batch AI job's step noted in its node's
 * execution log, so that the batch script and batchai-job report the first failing task's own exit code, not
 * the 143 of the ranks srun killed after it. */
#ifndef BAI_SPANK_TASK_EXIT_H
#define BAI_SPANK_TASK_EXIT_H

#include "spank_slurm.h"

int bai_remote_task_exit(spank_t sp, int ac, char **av);

#endif
