/* The prolog's job file, parsed where a parser bug can do no more than the job's user could: a child that is
 * the user, confined, runs batchai-plan (batchai_plan.c), which hands back the plan (plan_wire.h); root takes
 * the plan apart with the wire reader, binds it to the job and holds every field to the site's policy again
 * (SECURITY.md, "Where the line is"). Root itself never parses a byte the user wrote. */
#ifndef BAI_PLAN_CHILD_H
#define BAI_PLAN_CHILD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "plan_wire.h"
#include "node/rootfs.h"
#include "jobfile/batchai_jobfile.h"

/* The helper's file name, next to spank_batchai.so. */
#define BAI_PLAN_HELPER "batchai-plan"

/* The parser's limits: CPU seconds (a job file of BAI_JOB_MAX_BYTES takes a small fraction of one), address
 * space; the deadline is the prolog's. */
#define BAI_PLAN_CPU_S 2
#define BAI_PLAN_AS_BYTES ((rlim_t)1 << 30)
/* The uid and gid that parse a job of root's: nobody. */
#define BAI_PLAN_NOBODY 65534

struct bai_plan_request {
    uint32_t jobid;
    uid_t uid;
    gid_t gid;
    const char *path;        /* the job file's absolute path (messages, an Azure ML job's code directory) */
    const char *text;        /* its bytes, as read by the user's reader or handed over by sbatch */
    size_t text_len;
    const char *digest;      /* the digest sbatch validated, or NULL */
    const char *job_name;    /* --batchai-name, or NULL */
    const char *user_shares; /* --batchai-share, or NULL */
    const char *cluster;     /* --batchai-cluster, or NULL */
    int ac;                  /* the plugstack arguments, handed to the helper */
    char **av;
    long long deadline_ms;
};

/* Run the helper for rq and check its plan: the job id, uid and digest of rq->text (and rq->digest) must be
 * the plan's, and every path and name within `site`'s policy. Returns 0 with w filled (free w->plan with
 * bai_plan_free), or -1 with the reason in why (BAI_WHY_MAX), w empty. */
int bai_plan_get(const struct bai_plan_request *rq, const struct bai_settings *site, struct bai_wire_plan *w,
                 char *why);

/* Hold a plan to the site's policy and bind it to the job (what bai_plan_get checks after reading it). */
int bai_plan_hold(const struct bai_wire_plan *w, const struct bai_settings *site, uint32_t jobid, uid_t uid,
                  const char *digest, char *why);

#endif
