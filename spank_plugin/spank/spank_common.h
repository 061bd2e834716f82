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

#include "jobfile/batchai_jobfile.h"
#include "node/rootfs.h"

#define BAI_OPTION_NAME "batchai-job"
#define BAI_NAME_OPTION_NAME "batchai-name"
#define BAI_SHARE_OPTION_NAME "batchai-share"
#define BAI_CLUSTER_OPTION_NAME "batchai-cluster"

/* slurm_error() for every message of the plugin: the formatted line has its control characters (a line
 * break, an escape sequence, from a path or a message the user chose) written as \n, \t or \xHH and is cut
 * at 2 KiB, so that nothing a user names can forge or garble a line of slurmd's log. */
void bai_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Register --batchai-job=FILE, --batchai-name=NAME and --batchai-share=NAME=DIR[,...] with Slurm (a static
 * spank_options table is ignored by sbatch). */
int bai_option_register(spank_t sp);

/* --batchai-name's value where spank_option_getopt works, or NULL (the job file's name then names the job).
 * Owned by Slurm. */
const char *bai_name_value(spank_t sp);

/* --batchai-share's value (the user's share maps, batchai_jobfile.h), or NULL. Owned by Slurm. */
const char *bai_share_value(spank_t sp);

/* --batchai-cluster's value (the job's cluster, batchai_jobfile.h), or NULL. Owned by Slurm. */
const char *bai_cluster_value(spank_t sp);

/* The option's value in contexts where spank_option_getopt works (remote user_init, prolog, epilog),
 * or NULL when the job did not use the option. Owned by Slurm. */
const char *bai_option_value(spank_t sp);

/* Fill `site` from the plugstack arguments. Unknown keys, bad values and duplicates are logged, one line
 * each, and fail: an admin's typo never passes silently. */
int bai_site_load(int ac, char **av, struct bai_settings *site);

/* Log every fault of `d` through slurm_error as "batchai: <prefix><message>". */
void bai_log_diag(const struct bai_diag *d, const char *prefix);

/* Where a job file comes from, and how the plugin's reader (a child process) gets it. */
struct bai_source {
    const char *path;        /* absolute; with `content`, only named in messages */
    const char *content;     /* non-NULL: the file's bytes, already read (the prolog's verified copy,
                              * rootfs.h), taken instead of reading path; content_len of them */
    size_t content_len;
    uid_t uid;               /* read by a child that has fully become uid/gid; (uid_t)-1: a child that
                              * keeps the caller's identity (the caller already is the user) */
    gid_t gid;
    long long deadline_ms;   /* bai_now_ms() (as_user.h) by which the child must be done, else it is killed: a job file
                              * on a file system that never answers cannot hold any context */
    const char *digest;      /* the SHA-256 (hex) the content must have, or NULL */
    const char *job_name;    /* --batchai-name, or NULL for the file's name */
    const char *user_shares; /* --batchai-share, or NULL */
    const char *cluster;     /* --batchai-cluster, or NULL */
    bool keep_text;          /* keep the bytes read in bai_loaded.text (the prolog, for its copy) */
};

/* The site settings and the job file opened with them. */
struct bai_loaded {
    struct bai_settings site;
    struct bai_opened file;  /* file.plan from BAI_JOB_POLICY on */
    char *text;              /* with src->keep_text: the bytes read (text_len of them, NUL-terminated);
                              * wiped when freed: they may hold secrets' values */
    size_t text_len;
    bool have_site, have_file;
};

/* The site settings from the plugstack arguments, then bai_job_open (batchai_jobfile.h) at `level` with the reader
 * above: src->content when given; else root never opens a user's file: a child reads it, as src->uid when
 * set (O_NONBLOCK, regular files only, at most BAI_JOB_MAX_BYTES), and is killed at src->deadline_ms. The allocator opens at BAI_JOB_HOST,
 * the nodes at BAI_JOB_POLICY. Faults are logged with the path; the first is also copied to `why`
 * (BAI_WHY_MAX, may be NULL). */
int bai_load(struct bai_loaded *l, int ac, char **av, const struct bai_source *src, enum bai_job_level level,
             char *why);

void bai_loaded_free(struct bai_loaded *l);

/* How long reading a job file may take where no other deadline applies (the allocator, in sbatch). */
#define BAI_JOB_READ_DEADLINE_MS 20000

/* Make an absolute path of `path` relative to `base` (NULL or "" = the current directory). Newly
 * allocated, NULL on OOM. */
char *bai_abspath(const char *path, const char *base);

#endif
