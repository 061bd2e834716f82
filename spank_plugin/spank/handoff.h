/* What the allocator hands to the nodes about a Batch AI job.
 *
 * sbatch's plugin validated the file; the nodes must know which file, what its content was, where its logs
 * go and whose script runs. Slurm carries this as job control variables (spank_job_control_setenv in the
 * allocator), which the prolog and epilog see in their environment as SPANK_<NAME> and the job's steps as
 * SLURM_SPANK_<NAME>. handoff.c alone spells those names and knows which context sees which spelling; the
 * build fails when another file under spank/ names them (spank_plugin/plugin.mk).
 *
 * Every value comes from the user's side (sbatch runs as the user, and a user can set the variables
 * themselves, e.g. with srun --export): the nodes use them only as claims to check, never as trusted facts.
 */
#ifndef BAI_HANDOFF_H
#define BAI_HANDOFF_H

#include <limits.h>

#include "spank_slurm.h"

enum bai_script_origin {
    BAI_SCRIPT_UNKNOWN = 0, /* not handed over (srun --batchai-job making its own allocation) */
    BAI_SCRIPT_GENERATED,   /* the batch script is the one the plugin rendered */
    BAI_SCRIPT_USER,        /* the user gave their own script */
};

/* The most bytes of a job file that travel with the job (the snapshot): Slurm passes the job control variables
 * to the prolog in its environment, where one string may hold 128 KiB (MAX_ARG_STRLEN). */
#define BAI_SNAPSHOT_MAX_BYTES (64 * 1024)

struct bai_handoff {
    char job_file[PATH_MAX]; /* the job file's absolute path; "" when not handed over */
    char digest[65];         /* SHA-256 (hex) of the content the allocator validated; "" when not handed over */
    char log_dir[PATH_MAX];  /* the plan's log directory ("%j" pattern), absolute; "" when not handed over */
    enum bai_script_origin script;
};

/* Allocator, in init_post_opt: hand h over, and with it `text` (the file's `len` bytes as validated, the
 * snapshot the nodes run; NULL: none, the nodes read the path). The snapshot is the last variable handed over:
 * slurmctld's debug3 log lists a job's first three. Returns 0, or -1 after logging. */
int bai_handoff_put(spank_t sp, const struct bai_handoff *h, const char *text);

/* Any other context: what the allocator handed over, as this context sees it. A value that is missing, too
 * long for its field or, for the paths, not absolute is left empty. Never fails. */
void bai_handoff_get(spank_t sp, struct bai_handoff *h);

/* srun (local context) inside a job: the job file the job's allocator handed over, from srun's own
 * environment (the job's); NULL outside a Batch AI job. A claim, as every handed-over value is. */
const char *bai_handoff_local_job_file(void);

/* The prolog and epilog: the snapshot handed over, or NULL. Owned by the environment. */
const char *bai_handoff_text(void);

/* A task, before anything else: drop the snapshot from its environment (Slurm puts every job control
 * variable into every task's), so that the batch script, srun's environment and a container's config carry
 * no copy of the job file. */
void bai_handoff_drop_text(spank_t sp);

#endif
