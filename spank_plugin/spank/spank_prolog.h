/* Job prolog and epilog (slurmd, as root, once per node; PrologFlags=Alloc runs the prolog at allocation,
 * before the batch step opens --output). Root makes <job_root>/<jobid> and hands it to the job's user; a
 * child that has fully become the user makes everything in the user's places (log directory, mount links,
 * output and temp directories, the secrets file). No user code runs here and every wait is bounded by the
 * prolog's deadline (BAI_PROLOG_DEADLINE_MS). A failure never fails the prolog (that would drain the
 * node): it is recorded in a root-owned marker in job_root that the job's tasks read, and the job fails with
 * the reason. See SECURITY.md. */
#ifndef BAI_SPANK_PROLOG_H
#define BAI_SPANK_PROLOG_H

#include "spank_slurm.h"

/* The whole prolog, and the epilog, are done well within Slurm's PrologEpilogTimeout: past this, what
 * still runs is killed and the node is reported as not prepared. */
#define BAI_PROLOG_DEADLINE_MS 20000

/* slurmd's start: load the settings (a bad plugstack line fails slurmd) and open job_root as the prolog
 * will, creating it if missing; a job_root root cannot trust is logged (the prolog refuses it job by job). */
int bai_slurmd_init(int ac, char **av);

int bai_job_prolog(spank_t sp, int ac, char **av);
int bai_job_epilog(spank_t sp, int ac, char **av);

#endif
