/* What every context of the SPANK plugin shares: the --batchai-job option, the site settings from the
 * plugstack arguments, loading a job file (as its user where the caller is root), and logging.
 *
 * Every message the plugin prints starts with "batchai: ". Functions return 0 on success and -1 after
 * logging what went wrong; none of them exits. */
#ifndef BAI_SPANK_COMMON_H
#define BAI_SPANK_COMMON_H

#include <stdbool.h>
#include <sys/types.h>

#include "spank_slurm.h"

#include "diag.h"
#include "job.h"
#include "settings.h"
#include "rootfs.h"
#include "translate.h"

#define BAI_OPTION_NAME "batchai-job"

/* Names of the job control variables the allocator sets: the prolog/epilog see them in their environment
 * with a "SPANK_" prefix, the tasks in the job environment with a "SLURM_SPANK_" prefix. */
#define BAI_CTL_JOB_FILE "BATCHAI_JOB_FILE"   /* the job file's absolute path */
#define BAI_CTL_SCRIPT   "BATCHAI_SCRIPT"     /* "generated" (the plugin's script ran) or "user" */

/* slurm_error() for every message of the plugin: the formatted line has its control characters (a line
 * break, an escape sequence, from a path or a message the user chose) written as \n, \t or \xHH and is cut
 * at 2 KiB, so that nothing a user names can forge or garble a line of slurmd's log. */
void bai_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

/* Names of the job control variables: BAI_CTL_DIGEST carries the SHA-256 of the job file the allocator
 * validated; the nodes refuse a file whose content differs (swapped after submission). */
#define BAI_CTL_DIGEST   "BATCHAI_JOB_DIGEST"
/* The log directory ("%j" pattern) sbatch planned: a prolog that cannot use the file (changed, unreadable)
 * still makes it, as the user, so that the batch step's output, and the reason, have a place. */
#define BAI_CTL_LOG_DIR  "BATCHAI_LOG_DIR"

/* Where a job file comes from. */
struct bai_source {
    const char *path;
    uid_t uid;               /* read by a child that has fully become uid/gid; (uid_t)-1: a child that
                              * keeps the caller's identity (the caller already is the user) */
    gid_t gid;
    long long deadline_ms;   /* bai_now_ms() by which the child must be done, else it is killed: a job file
                              * on a file system that never answers cannot hold any context */
    const char *digest;      /* the SHA-256 (hex) the content must have, or NULL */
};

/* A job file loaded and translated: job, site settings and the plan (which points into job). */
struct bai_loaded {
    struct bai_settings site;
    struct bai_job job;
    struct bai_plan plan;
    char digest[65];         /* SHA-256 of the content read */
    bool have_site, have_job, have_plan;
};

/* Read the job file, check its digest, parse, validate and translate it with the site settings. Root never
 * opens a user's file: a child reads it, as src->uid when set (O_NONBLOCK, regular files only, at most
 * BAI_JOB_MAX_BYTES), and is killed at src->deadline_ms. `job_name` may be NULL (file's base
 * name). Faults are logged with the path; the first is also copied to `why` (BAI_WHY_MAX, may be NULL). */
int bai_load(struct bai_loaded *l, int ac, char **av, const struct bai_source *src, const char *job_name,
             char *why);

void bai_loaded_free(struct bai_loaded *l);

/* How long reading a job file may take where no other deadline applies (allocator, tasks). */
#define BAI_JOB_READ_DEADLINE_MS 20000

/* Milliseconds on the monotonic clock, for deadlines. */
long long bai_now_ms(void);

/* Start fn(arg) in a child that has fully dropped to uid/gid (setgroups with the user's groups, setresgid,
 * setresuid; checked; uid (uid_t)-1 keeps the caller's identity), in a session of its own, with 0-2 on
 * /dev/null and every other file descriptor but keep_fd (-1: none, else >= 3) closed, so no fd of root's or
 * slurmd's leaks to it or stays held by it. fn's return value is the child's exit status. Returns the pid,
 * or -1. */
pid_t bai_spawn_as_user(uid_t uid, gid_t gid, int keep_fd, int (*fn)(void *arg), void *arg);

/* Wait for child `pid` until deadline_ms. Returns its exit status (0-255); -1 when it was killed by a
 * signal or could not be waited for; -2 when the deadline passed: the child's whole session was then
 * killed (SIGKILL) and is reaped if it goes within a second. */
int bai_wait_child(pid_t pid, long long deadline_ms);

/* bai_spawn_as_user + bai_wait_child. */
int bai_run_as_user(uid_t uid, gid_t gid, int keep_fd, long long deadline_ms, int (*fn)(void *arg), void *arg);

/* Make an absolute path of `path` relative to `base` (NULL or "" = the current directory). Newly
 * allocated, NULL on OOM. */
char *bai_abspath(const char *path, const char *base);

#endif
