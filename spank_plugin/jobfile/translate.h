/* Translation of a validated job into a Slurm job: the plan (plan.h); render.h renders its batch script.
 * Translation is pure: it reads no file and touches nothing on the host, so it is deterministic and safe to
 * run anywhere. Checks that need the host (does a share's directory exist? is a bundle staged?) are made by
 * the plugin at submit time with bai_plan_check_host(). */
#ifndef BAI_TRANSLATE_H
#define BAI_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "job.h"
#include "plan.h"
#include "settings.h"

/* A user's own share maps, "NAME=DIR[,NAME=DIR...]" (sbatch --batchai-share, batchai-job --share): for this
 * job, share NAME is the user's directory DIR, where the site allows it (user_shares). */
#define BAI_USER_SHARES_MAX 16

struct bai_translate_opts {
    const char *job_name;  /* default: the job file's base name without .json / .job.json */
    const char *job_file;  /* the job file's path as the user gave it (for --batchai-job= and comments) */
    const char *user_shares; /* NULL or the user's share maps (above) */
    const char *cluster;   /* NULL or the cluster named on the command line (sbatch --batchai-cluster,
                            * batchai-job --cluster): used as cluster.id is; one the file names must match */
};

/* bai_translate, except that the plan, as far as it got, is kept when there are faults: for the host's checks,
 * so that a file's faults are all reported at once (a container refused and a missing share). The caller
 * frees it with bai_plan_free either way. */
int bai_translate_all(const struct bai_job *job, const struct bai_settings *site,
                      const struct bai_translate_opts *opts, struct bai_plan *plan, struct bai_diag *d);

/* Build the plan. Returns 0, or -1 with every fault in diag (e.g. an unmapped path or a container job on a
 * site with container_runtime=none). */
int bai_translate(const struct bai_job *job, const struct bai_settings *site,
                  const struct bai_translate_opts *opts, struct bai_plan *plan, struct bai_diag *diag);


/* Check the plan against the site's policy, touching nothing on the host: no unmanaged mountCommand unless
 * allow_mount_command=yes, no key-vault secret. The allocator and every node (prolog and tasks) check it, so
 * a job that bypassed sbatch, or a file changed after submission, is held to the same policy. Returns 0, or
 * -1 with faults in diag. */
int bai_plan_check_policy(const struct bai_plan *plan, struct bai_diag *diag);

/* bai_plan_check_policy, then the host, at submit time: share directories exist, container bundles are
 * staged. Returns 0, or -1 with faults in diag. */
int bai_plan_check_host(const struct bai_plan *plan, struct bai_diag *diag);

#endif
