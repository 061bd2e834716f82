/* The one pipeline from a job file to a checked plan (see batchai_jobfile.h). */
#include "batchai_jobfile.h"

#include <stdlib.h>
#include <string.h>

#include "sha256.h"

static int read_direct(void *arg, const char *path, char **text, size_t *len, struct bai_diag *diag)
{
    (void)arg;
    return bai_job_read(path, text, len, diag);
}

const struct bai_job_reader bai_job_read_direct = {read_direct, NULL};

int bai_job_open(const struct bai_job_source *src, const struct bai_settings *site, enum bai_job_level level,
                 const struct bai_job_reader *reader, struct bai_opened *out, struct bai_diag *diag)
{
    char *text = NULL;
    size_t len = 0;
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (reader->read(reader->arg, src->path, &text, &len, diag) != 0)
        return -1;
    bai_sha256_hex(text, len, out->digest);
    if (src->digest && strcmp(src->digest, out->digest) != 0) {
        bai_diag_add(diag, NULL, "the file changed after it was submitted; submit it again");
        goto out;
    }
    if (bai_job_parse(text, len, &out->job, diag) != 0)
        goto out;
    out->have_job = true;
    if (level >= BAI_JOB_POLICY) {
        struct bai_translate_opts opts = {.job_name = src->job_name, .user_shares = src->user_shares,
                                          .cluster = src->cluster, .job_file = src->job_file ? src->job_file : src->path};
        int translated = bai_translate_all(&out->job, site, &opts, &out->plan, diag);
        out->have_plan = true;
        if (translated != 0) {
            /* What the host would say too, so that every fault comes at once. */
            if (level == BAI_JOB_HOST)
                (void)bai_plan_check_host(&out->plan, diag);
            goto out;
        }
        if ((level == BAI_JOB_HOST ? bai_plan_check_host : bai_plan_check_policy)(&out->plan, diag) != 0)
            goto out;
    }
    rc = 0;
out:
    explicit_bzero(text, len); /* secrets' values */
    free(text);
    if (rc != 0)
        bai_opened_free(out);
    return rc;
}

void bai_opened_free(struct bai_opened *o)
{
    if (o->have_plan)
        bai_plan_free(&o->plan);
    if (o->have_job)
        bai_job_free(&o->job);
    memset(o, 0, sizeof *o);
}
