/* Slurm's SPANK API, as the plugin includes it, and the two places where Slurm releases differ for it.
 *
 * What the plugin uses: spank_option_register and spank_option_getopt; spank_get_item with S_JOB_UID,
 * S_JOB_GID, S_JOB_ID, S_JOB_STEPID, S_JOB_NNODES, S_JOB_ENV and S_TASK_GLOBAL_ID; spank_getenv,
 * spank_setenv, spank_unsetenv and spank_job_control_setenv; spank_context with S_CTX_SLURMD and S_CTX_JOB_SCRIPT;
 * spank_strerror and slurm_error; the init, init_post_opt, task_init, job_prolog, job_epilog and exit
 * callbacks; ESPANK_SUCCESS; and SPANK_PLUGIN, which stamps the headers' release into plugin_version.
 *
 * Releases. There is no upper bound kept by hand: the compiler checks every call above against the spank.h
 * it builds with, and Slurm loads a SPANK plugin only into the release (major.minor) whose headers it was
 * built from, so a plugin never runs in a Slurm it was not compiled for. What a release changes beyond its
 * declarations is for the cluster suite to find: README.md lists the releases it passed on. The lower bound
 * is real: up to 20.11 spank_err_t was an enum of its own and SPANK_PLUGIN stamped the plugin's own number.
 * slurm/spank.h declares everything above the same way from 21.08 to 26.05.3 (23.11 adds
 * spank_prepend_task_argv, 25.05 slurm_spank_init_failure_mode).
 *
 * 1. Return values. Up to 24.11, slurmstepd counts only a negative return of most callbacks as a failure
 *    (24.11.7 slurmstepd/task.c: `spank_user_task(...) < 0`), so a positive one such as ESPANK_ERROR passes
 *    as success; from 25.05 every non-zero return is a failure. The plugin's callbacks therefore return 0 or
 *    -1 only (spank_dispatch.c folds every other value to -1), which mean the same on every release.
 * 2. slurm_spank_init_failure_mode (25.05+): whether a failed slurm_spank_init fails the node (drained, the
 *    job requeued; the only behaviour before 25.05) or the job alone. The build tests for it (plugin.mk sets
 *    BAI_HAVE_INIT_FAILURE_MODE when spank.h declares it), and spank_dispatch.c sets it to the node. */
#ifndef BAI_SPANK_SLURM_H
#define BAI_SPANK_SLURM_H

#include <slurm/slurm_version.h>

#if !defined(SLURM_VERSION_NUMBER) || !defined(SLURM_VERSION_NUM)
#error "spank_batchai: slurm/slurm_version.h defines no SLURM_VERSION_NUMBER; is this Slurm's?"
#elif SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(21, 8, 0)
#define BAI_STRING(x) #x
#define BAI_EXPAND(x) BAI_STRING(x)
#pragma message("this slurm/slurm_version.h is SLURM_VERSION_NUMBER " BAI_EXPAND(SLURM_VERSION_NUMBER) \
                " (0xMMmmuu: 0x140b09 is 20.11.9)")
#error "spank_batchai needs Slurm 21.08 or later: older spank.h has its own spank_err_t and SPANK_PLUGIN"
#endif

#include <slurm/spank.h>

#endif
