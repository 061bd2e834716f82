/* Slurm's SPANK API, as the plugin includes it: the build stops here on a Slurm whose spank.h this code has
 * not been checked against, instead of failing later or, worse, loading into a slurmd it does not fit.
 *
 * What the plugin uses: spank_option_register and spank_option_getopt; spank_get_item with S_JOB_UID,
 * S_JOB_GID, S_JOB_ID, S_JOB_STEPID, S_JOB_NNODES, S_JOB_ENV and S_TASK_GLOBAL_ID; spank_getenv,
 * spank_setenv and spank_job_control_setenv; spank_context with S_CTX_SLURMD and S_CTX_JOB_SCRIPT;
 * spank_strerror and slurm_error; the init, init_post_opt, task_init, job_prolog, job_epilog and exit
 * callbacks; ESPANK_SUCCESS/ERROR; and
 * SPANK_PLUGIN, which stamps Slurm's version into plugin_version (Slurm loads a SPANK plugin only into the
 * release, major.minor, it was built for). In SchedMD's history slurm/spank.h declares all of them the same
 * way from 21.08 to 25.11: the file is identical from 21.08.0 to 23.02.3, 23.02.4 fixes a comment, 23.11
 * adds spank_prepend_task_argv and 25.05 slurm_spank_init_failure_mode, neither used here. Up to 20.11,
 * spank_err_t was an enum of its own and SPANK_PLUGIN set plugin_version to the plugin's own number.
 * Built and tested (tests/cluster) against 22.05.8 only. */
#ifndef BAI_SPANK_SLURM_H
#define BAI_SPANK_SLURM_H

#include <slurm/slurm_version.h>

#if !defined(SLURM_VERSION_NUMBER) || !defined(SLURM_VERSION_NUM)
#error "spank_batchai: slurm/slurm_version.h defines no SLURM_VERSION_NUMBER; is this Slurm's?"
#elif SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(21, 8, 0) || SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 0, 0)
#define BAI_STRING(x) #x
#define BAI_EXPAND(x) BAI_STRING(x)
#pragma message("this slurm/slurm_version.h is SLURM_VERSION_NUMBER " BAI_EXPAND(SLURM_VERSION_NUMBER) \
                " (0xMMmmuu: 0x160508 is 22.05.8)")
#error "spank_batchai supports Slurm 21.08 to 25.11, whose spank.h it was checked against (spank_plugin/README.md)"
#endif

#include <slurm/spank.h>

#endif
