/* spank_batchai.so: the entry points Slurm calls, each handing over to the module of its context.
 *   allocator (sbatch, salloc)  spank_alloc.c   option, validation, the generated script
 *   local (srun outside a job)  spank_alloc.c   option only
 *   remote (each task)          spank_remote.c  the prolog's verdict (as root), environment, secrets,
 *                                               nodeCount check
 *   slurmd (at start)           spank_prolog.c  job_root checked
 *   job script (prolog/epilog)  spank_prolog.c  per-job directories, mounts, log directory
 * Only these slurm_spank_* symbols and the plugin_* symbols are exported (spank_batchai.lds). Every callback
 * returns through spank_rc, so 0 or -1: what other values mean differs between Slurm releases (spank_slurm.h). */
#include "spank_slurm.h"

#include "spank_alloc.h"
#include "spank_prolog.h"
#include "spank_remote.h"
#include "spank_task_exit.h"

/* The plugin is compiled with -fvisibility=hidden; what Slurm looks up is made visible here. */
#pragma GCC visibility push(default)

SPANK_PLUGIN(batchai, 1)

/* 0 stays 0; anything else becomes -1, a failure on every release (up to 24.11 a positive return of most
 * callbacks counts as success, from 25.05 as failure). */
static int spank_rc(int rc)
{
    return rc == 0 ? 0 : -1;
}

#ifdef BAI_HAVE_INIT_FAILURE_MODE
/* Slurm 25.05+: a failed slurm_spank_init on a node is the node's fault, never the job's: there it only
 * registers the option (remote and job script contexts) or checks the plugstack arguments (slurmd), which
 * fail alike for every job. So the node is drained and the job requeued, as before 25.05, instead of failing
 * job after job on a node that cannot run any. Job faults (a bad job file, a failed preparation) are
 * reported later, by the tasks, and never through init. */
int slurm_spank_init_failure_mode = ESPANK_NODE_FAILURE;
#endif

static int init(spank_t sp, int ac, char **av)
{
    switch (spank_context()) {
    case S_CTX_ALLOCATOR:
        return bai_alloc_init(sp, ac, av);
    case S_CTX_LOCAL:
        return bai_local_init(sp, ac, av);
    case S_CTX_REMOTE:
        return bai_remote_init(sp, ac, av);
    case S_CTX_SLURMD:
        /* slurmd's start: a job_root that root cannot trust is reported at once, not job by job. */
        return bai_slurmd_init(ac, av);
    case S_CTX_JOB_SCRIPT:
        /* spank_option_getopt in the prolog/epilog needs the option registered. */
        return bai_remote_init(sp, ac, av);
    default:
        return 0;
    }
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    return spank_rc(init(sp, ac, av));
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    return spank_rc(spank_context() == S_CTX_ALLOCATOR ? bai_alloc_post_opt(sp, ac, av) : 0);
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
    return spank_rc(spank_context() == S_CTX_REMOTE ? bai_remote_task_privileged(sp, ac, av) : 0);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    return spank_rc(spank_context() == S_CTX_REMOTE ? bai_remote_task_init(sp, ac, av) : 0);
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
    return spank_rc(spank_context() == S_CTX_REMOTE ? bai_remote_task_exit(sp, ac, av) : 0);
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    return spank_rc(bai_job_prolog(sp, ac, av));
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    return spank_rc(bai_job_epilog(sp, ac, av));
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    return spank_rc(spank_context() == S_CTX_ALLOCATOR ? bai_alloc_exit(sp, ac, av) : 0);
}

#pragma GCC visibility pop
