/* The allocator's handoff to the nodes, and the only place its names are spelt (see handoff.h). */
#include "handoff.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spank_common.h"

/* The job control variables. */
#define JOB_FILE "BATCHAI_JOB_FILE"
#define DIGEST   "BATCHAI_JOB_DIGEST"
#define LOG_DIR  "BATCHAI_LOG_DIR"
#define SCRIPT   "BATCHAI_SCRIPT"
#define TEXT     "BATCHAI_JOB_TEXT"

int bai_handoff_put(spank_t sp, const struct bai_handoff *h, const char *text)
{
    const char *script = h->script == BAI_SCRIPT_GENERATED ? "generated" : "user";
    if (spank_job_control_setenv(sp, JOB_FILE, h->job_file, 1) != ESPANK_SUCCESS ||
        spank_job_control_setenv(sp, DIGEST, h->digest, 1) != ESPANK_SUCCESS ||
        spank_job_control_setenv(sp, LOG_DIR, h->log_dir, 1) != ESPANK_SUCCESS ||
        spank_job_control_setenv(sp, SCRIPT, script, 1) != ESPANK_SUCCESS) {
        bai_error("batchai: cannot pass the job file's path to the nodes");
        return -1;
    }
    if (text && spank_job_control_setenv(sp, TEXT, text, 1) != ESPANK_SUCCESS) {
        bai_error("batchai: cannot pass the job file's content to the nodes");
        return -1;
    }
    return 0;
}

const char *bai_handoff_text(void)
{
    const char *v = getenv("SPANK_" TEXT);
    return v && *v ? v : NULL;
}

void bai_handoff_drop_text(spank_t sp)
{
    (void)spank_unsetenv(sp, "SLURM_SPANK_" TEXT);
}

/* One variable into buf: the prolog and epilog have them in their own environment as SPANK_<name>
 * (spank_job_control_getenv() crashes there on Slurm 22.05: it dlclose()s a NULL handle); a step reads the
 * job's environment, where they are SLURM_SPANK_<name>. */
static bool get(spank_t sp, const char *name, char *buf, size_t size)
{
    char var[64];
    buf[0] = '\0';
    if (spank_context() == S_CTX_JOB_SCRIPT) {
        snprintf(var, sizeof var, "SPANK_%s", name);
        const char *v = getenv(var);
        if (!v || strlen(v) >= size)
            return false;
        memcpy(buf, v, strlen(v) + 1);
        return true;
    }
    snprintf(var, sizeof var, "SLURM_SPANK_%s", name);
    if (spank_getenv(sp, var, buf, (int)size) != ESPANK_SUCCESS) {
        buf[0] = '\0';
        return false;
    }
    return true;
}

void bai_handoff_get(spank_t sp, struct bai_handoff *h)
{
    char script[16];
    memset(h, 0, sizeof *h);
    if (get(sp, JOB_FILE, h->job_file, sizeof h->job_file) && h->job_file[0] != '/')
        h->job_file[0] = '\0';
    (void)get(sp, DIGEST, h->digest, sizeof h->digest);
    if (get(sp, LOG_DIR, h->log_dir, sizeof h->log_dir) && h->log_dir[0] != '/')
        h->log_dir[0] = '\0';
    if (get(sp, SCRIPT, script, sizeof script))
        h->script = strcmp(script, "generated") == 0 ? BAI_SCRIPT_GENERATED : BAI_SCRIPT_USER;
}

const char *bai_handoff_local_job_file(void)
{
    const char *v = getenv("SLURM_SPANK_" JOB_FILE);
    return v && v[0] == '/' ? v : NULL;
}
