/* Remote context (slurmstepd, every step on every node): the job's environment in every task, secrets
 * read from the job file on the node at run time, the prolog's verdict for the node, and the check that a
 * user-supplied script's allocation matches nodeCount. */
#ifndef BAI_SPANK_REMOTE_H
#define BAI_SPANK_REMOTE_H

#include "spank_slurm.h"

int bai_remote_init(spank_t sp, int ac, char **av);
int bai_remote_task_init(spank_t sp, int ac, char **av);
/* task_init_privileged: still root, in the task's own process; reads the prolog's verdict for task_init. */
int bai_remote_task_privileged(spank_t sp, int ac, char **av);

#endif
