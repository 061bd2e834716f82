/* Allocator context (sbatch, salloc) and srun's local context: find --batchai-job before sbatch reads its
 * options, refuse an invalid job file before anything is queued, and hand sbatch the rendered batch
 * script on standard input when the user gave none. */
#ifndef BAI_SPANK_ALLOC_H
#define BAI_SPANK_ALLOC_H

#include "spank_slurm.h"

int bai_alloc_init(spank_t sp, int ac, char **av);
int bai_alloc_post_opt(spank_t sp, int ac, char **av);
int bai_alloc_exit(spank_t sp, int ac, char **av);

/* srun outside a job: the option is registered so that srun accepts it; the job file is checked on the
 * nodes (remote context), where it is needed. */
int bai_local_init(spank_t sp, int ac, char **av);

#endif
