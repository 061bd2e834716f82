/* Opening a job file: the one pipeline that batchai-job, the allocator, the prolog and the tasks share.
 *
 * bai_job_open reads the file through a reader, checks its digest, parses and validates it, translates it
 * with the site settings and holds the plan to the site, as far as the level asks. Every caller goes through
 * it, so `batchai-job validate` and `translate` give the answer sbatch gives with the same settings, and a
 * node holds a file to the same rules as the submit host. Only the reader differs: the command reads the
 * file itself (bai_job_read_direct); the plugin reads it in a child process, as the user in the prolog, that
 * is killed at a deadline (spank/as_user.h). */
#ifndef BAI_LOAD_H
#define BAI_LOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "job.h"
#include "settings.h"
#include "translate.h"

/* How far bai_job_open goes; each level includes the ones before. */
enum bai_job_level {
    BAI_JOB_PARSE,  /* read, digest, parse and validate the document: what the file says */
    BAI_JOB_POLICY, /* translate with the site settings into a plan, and hold it to the site's policy
                     * (bai_plan_check_policy): what every node checks, touching nothing on the host */
    BAI_JOB_HOST,   /* and check the host (bai_plan_check_host: share directories, staged bundles): what
                     * sbatch checks at submission, and batchai-job by default */
};

/* Reads the file at `path` into a new NUL-terminated buffer of at most BAI_JOB_MAX_BYTES; on failure records
 * the reason in diag (at the file level) and returns -1. */
struct bai_job_reader {
    int (*read)(void *arg, const char *path, char **text, size_t *len, struct bai_diag *diag);
    void *arg;
};

/* The reader of a process that may read the file itself: bai_job_read. */
extern const struct bai_job_reader bai_job_read_direct;

struct bai_job_source {
    const char *path;     /* what the reader opens */
    const char *job_file; /* the absolute path the plan names (--batchai-job=, an Azure ML job's code and
                           * data are found from it); NULL: path */
    const char *job_name; /* NULL: the file's base name without .json / .job.json */
    const char *digest;   /* the SHA-256 (hex) the content must have (the allocator's), or NULL */
    const char *user_shares; /* the user's share maps (translate.h), or NULL */
    const char *cluster;  /* the cluster named on the command line (translate.h), or NULL */
};

/* An opened job file. plan is set from BAI_JOB_POLICY on. */
struct bai_opened {
    struct bai_job job;
    struct bai_plan plan;
    char digest[65];      /* SHA-256 (hex) of the content read */
    bool have_job, have_plan;
};

/* Open src at `level` with the site settings `site` (unused at BAI_JOB_PARSE, may then be NULL). Returns 0
 * with `out` filled (free with bai_opened_free), or -1 with every fault in diag and `out` empty. The text
 * read is wiped before it is freed: it may hold secrets' values. Faults name JSON paths, not the file: the
 * caller prefixes them with the name it knows the file by. */
int bai_job_open(const struct bai_job_source *src, const struct bai_settings *site, enum bai_job_level level,
                 const struct bai_job_reader *reader, struct bai_opened *out, struct bai_diag *diag);

void bai_opened_free(struct bai_opened *o);

#endif
