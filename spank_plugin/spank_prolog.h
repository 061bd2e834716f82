/* Job prolog and epilog (slurmd, as root, once per node; PrologFlags=Alloc runs the prolog at allocation,
 * before the batch step opens --output): per-job directories, mount points, the Batch AI log directory,
 * and for jobs with their own script the preparation command, always as the job's user. Nothing the user
 * wrote runs as root. A failure here never fails the prolog (that would drain the node): it is recorded
 * for user_init, which fails the job with the reason. */
#ifndef BAI_SPANK_PROLOG_H
#define BAI_SPANK_PROLOG_H

#include <slurm/spank.h>

/* The file in which the prolog records why a node could not be prepared: <job_dir>/.prolog-failed-<node>.
 * Newly allocated. */
char *bai_prolog_failure_path(const char *job_dir, const char *node);

int bai_job_prolog(spank_t sp, int ac, char **av);
int bai_job_epilog(spank_t sp, int ac, char **av);

#endif
