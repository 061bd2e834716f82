/* What every context of the SPANK plugin shares: the --batchai-job option, the site settings from the
 * plugstack arguments, loading a job file (as its user where the caller is root), and logging.
 *
 * Every message the plugin prints starts with "batchai: ". Functions return 0 on success and -1 after
 * logging what went wrong; none of them exits. */
#ifndef BAI_SPANK_COMMON_H
#define BAI_SPANK_COMMON_H

#include <stdbool.h>
#include <sys/types.h>

#include <slurm/spank.h>

#include "diag.h"
#include "job.h"
#include "settings.h"
#include "translate.h"

#define BAI_OPTION_NAME "batchai-job"

/* Names of the job control variables the allocator sets: the prolog/epilog see them in their environment
 * with a "SPANK_" prefix, the tasks in the job environment with a "SLURM_SPANK_" prefix. */
#define BAI_CTL_JOB_FILE "BATCHAI_JOB_FILE"   /* the job file's absolute path */
#define BAI_CTL_SCRIPT   "BATCHAI_SCRIPT"     /* "generated" (the plugin's script ran) or "user" */

/* Register --batchai-job=FILE with Slurm (a static spank_options table is ignored by sbatch). */
int bai_option_register(spank_t sp);

/* The option's value in contexts where spank_option_getopt works (remote user_init, prolog, epilog),
 * or NULL when the job did not use the option. Owned by Slurm. */
const char *bai_option_value(spank_t sp);

/* Fill `site` from the plugstack arguments. Unknown keys, bad values and duplicates are logged, one line
 * each, and fail: an admin's typo never passes silently. */
int bai_site_load(int ac, char **av, struct bai_settings *site);

/* Log every fault of `d` through slurm_error as "batchai: <prefix><message>". */
void bai_log_diag(const struct bai_diag *d, const char *prefix);

/* A job file loaded and translated: job, site settings and the plan (which points into job). */
struct bai_loaded {
    struct bai_settings site;
    struct bai_job job;
    struct bai_plan plan;
    bool have_site, have_job, have_plan;
};

/* Read the job file at `path` and translate it with the site settings. When `as_uid` is not (uid_t)-1 the
 * file is read by a child that has fully become that user (the caller is root and the path is the user's
 * word), so root never opens a file on a user's behalf. `job_name` may be NULL (file's base name).
 * Faults are logged with the path. */
int bai_load(struct bai_loaded *l, int ac, char **av, const char *path, uid_t as_uid, gid_t as_gid,
             const char *job_name);

void bai_loaded_free(struct bai_loaded *l);

/* Run fn(arg) in a child process that has dropped all privileges to uid/gid (supplementary groups of the
 * user included); returns the child's exit status (0-255), or -1 when it could not be run or was killed.
 * fn must not return to the caller's code: its return value becomes the child's exit status. */
int bai_run_as_user(uid_t uid, gid_t gid, int (*fn)(void *arg), void *arg);

/* Make an absolute path of `path` relative to `base` (NULL or "" = the current directory). Newly
 * allocated, NULL on OOM. */
char *bai_abspath(const char *path, const char *base);

#endif
