/* Shared parts of the SPANK plugin: option, site settings, loading a job file, logging. */
#include "spank_common.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "node/as_user.h"

void bai_error(const char *fmt, ...)
{
    char raw[2048], out[2048 * 4 + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t o = 0;
    for (const unsigned char *c = (const unsigned char *)raw; *c; c++) {
        if (*c >= 0x20 && *c != 0x7f)
            out[o++] = (char)*c;
        else if (*c == '\n' || *c == '\t')
            o += (size_t)sprintf(out + o, "\\%c", *c == '\n' ? 'n' : 't');
        else
            o += (size_t)sprintf(out + o, "\\x%02x", *c);
    }
    out[o] = '\0';
    slurm_error("%s", out);
}

/* The option callback only checks that a value came; the work happens where Slurm lets it change things
 * (init in the allocator, user_init/prolog on the nodes). It can fire twice on the remote side. */
static int option_cb(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    if (!optarg || !*optarg) {
        bai_error("batchai: --%s needs the path of a job file", BAI_OPTION_NAME);
        return -1;
    }
    return 0;
}

static struct spank_option bai_option = {
    .name = BAI_OPTION_NAME,
    .arginfo = "FILE",
    .usage = "Run the Azure Batch AI job described by FILE (job.json); no script needed.",
    .has_arg = 1,
    .val = 0,
    .cb = option_cb,
};

/* --batchai-name, --batchai-share and --batchai-cluster: a value must come; the translation checks it. */
static int name_cb(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    if (!optarg || !*optarg) {
        bai_error("batchai: --%s, --%s and --%s need a value", BAI_NAME_OPTION_NAME, BAI_SHARE_OPTION_NAME,
                  BAI_CLUSTER_OPTION_NAME);
        return -1;
    }
    return 0;
}

static struct spank_option bai_name_option = {
    .name = BAI_NAME_OPTION_NAME,
    .arginfo = "NAME",
    .usage = "The Batch AI job's name (its log directory), instead of the job file's name (batchai-job -n).",
    .has_arg = 1,
    .val = 0,
    .cb = name_cb,
};

static struct spank_option bai_share_option = {
    .name = BAI_SHARE_OPTION_NAME,
    .arginfo = "NAME=DIR[,NAME=DIR]",
    .usage = "Share NAME of the Batch AI job is your directory DIR, where the site allows it (user_shares).",
    .has_arg = 1,
    .val = 0,
    .cb = name_cb,
};

static struct spank_option bai_cluster_option = {
    .name = BAI_CLUSTER_OPTION_NAME,
    .arginfo = "NAME",
    .usage = "The Batch AI job's cluster, as az batchai job create --cluster: mapped by the site as cluster.id is.",
    .has_arg = 1,
    .val = 0,
    .cb = name_cb,
};

int bai_option_register(spank_t sp)
{
    struct spank_option *opts[] = {&bai_option, &bai_name_option, &bai_share_option, &bai_cluster_option};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        spank_err_t err = spank_option_register(sp, opts[i]);
        if (err != ESPANK_SUCCESS) {
            bai_error("batchai: cannot register --%s: %s", opts[i]->name, spank_strerror(err));
            return -1;
        }
    }
    return 0;
}

static const char *value_of(spank_t sp, struct spank_option *opt)
{
    char *value = NULL;
    if (spank_option_getopt(sp, opt, &value) != ESPANK_SUCCESS || !value || !*value)
        return NULL;
    return value;
}

const char *bai_name_value(spank_t sp)
{
    return value_of(sp, &bai_name_option);
}

const char *bai_share_value(spank_t sp)
{
    return value_of(sp, &bai_share_option);
}

const char *bai_cluster_value(spank_t sp)
{
    return value_of(sp, &bai_cluster_option);
}

static const char *value_of(spank_t sp, struct spank_option *opt);

const char *bai_option_value(spank_t sp)
{
    return value_of(sp, &bai_option);
}

struct diag_log_ctx {
    const char *prefix;
};

static void log_one(void *arg, const char *msg)
{
    const struct diag_log_ctx *c = arg;
    bai_error("batchai: %s%s", c->prefix, msg);
}

void bai_log_diag(const struct bai_diag *d, const char *prefix)
{
    struct diag_log_ctx c = {prefix ? prefix : ""};
    bai_diag_each(d, log_one, &c);
}

int bai_site_load(int ac, char **av, struct bai_settings *site)
{
    struct bai_diag diag = {0};
    int rc = -1;

    if (bai_settings_init(site) != 0) {
        bai_error("batchai: out of memory reading plugstack arguments");
        return -1;
    }
    for (int i = 0; i < ac; i++)
        (void)bai_settings_apply(site, av[i], "plugstack.conf", true, &diag);
    if (bai_diag_total(&diag) > 0) {
        bai_log_diag(&diag, "");
        bai_error("batchai: the plugstack.conf line of spank_batchai.so has errors; fix it (see %s)",
                  "spank_plugin/README.md");
        bai_settings_free(site);
        goto out;
    }
    rc = 0;
out:
    bai_diag_free(&diag);
    return rc;
}

static void first_message(void *arg, const char *msg)
{
    char *why = arg;
    if (!why[0])
        snprintf(why, BAI_WHY_MAX, "%s", msg);
}

struct load_read {
    const struct bai_source *src;
    struct bai_loaded *l;
};

/* bai_load's reader: the source's bytes, or the file read as the user; a copy is kept in l when asked. */
static int read_user(void *arg, const char *path, char **text, size_t *len, struct bai_diag *diag)
{
    (void)path; /* the source's */
    const struct load_read *r = arg;
    if (r->src->content) {
        *len = r->src->content_len;
        *text = malloc(*len + 1);
        if (*text) {
            memcpy(*text, r->src->content, *len);
            (*text)[*len] = '\0';
        }
    } else if (bai_read_as_user(r->src->path, r->src->uid, r->src->gid, r->src->deadline_ms, text, len, diag) != 0)
        return -1;
    if (*text && !r->src->keep_text)
        return 0;
    r->l->text = *text ? malloc(*len + 1) : NULL;
    if (!r->l->text) {
        free(*text);
        *text = NULL;
        bai_diag_add(diag, NULL, "out of memory");
        return -1;
    }
    memcpy(r->l->text, *text, *len + 1);
    r->l->text_len = *len;
    return 0;
}

int bai_load(struct bai_loaded *l, int ac, char **av, const struct bai_source *src, enum bai_job_level level,
             char *why)
{
    struct bai_diag diag = {0};
    int rc = -1;

    memset(l, 0, sizeof *l);
    if (why)
        why[0] = '\0';
    if (bai_site_load(ac, av, &l->site) != 0) {
        if (why)
            snprintf(why, BAI_WHY_MAX, "the plugin's plugstack.conf line has errors (see the slurmd log)");
        return -1;
    }
    l->have_site = true;
    struct bai_job_source js = {.path = src->path, .digest = src->digest, .job_name = src->job_name,
                                .user_shares = src->user_shares, .cluster = src->cluster};
    struct load_read r = {src, l};
    struct bai_job_reader reader = {read_user, &r};
    if (bai_job_open(&js, &l->site, level, &reader, &l->file, &diag) == 0) {
        l->have_file = true;
        rc = 0;
    } else {
        char prefix[PATH_MAX + 8];
        snprintf(prefix, sizeof prefix, "%s: ", src->path);
        bai_log_diag(&diag, prefix);
        if (why) {
            char first[BAI_WHY_MAX] = "";
            bai_diag_each(&diag, first_message, first);
            snprintf(why, BAI_WHY_MAX, "%.200s: %.300s", src->path, first);
        }
        bai_loaded_free(l);
    }
    bai_diag_free(&diag);
    return rc;
}

void bai_loaded_free(struct bai_loaded *l)
{
    if (l->text) {
        explicit_bzero(l->text, l->text_len);
        free(l->text);
    }
    if (l->have_file)
        bai_opened_free(&l->file);
    if (l->have_site)
        bai_settings_free(&l->site);
    memset(l, 0, sizeof *l);
}

char *bai_abspath(const char *path, const char *base)
{
    char cwd[PATH_MAX];
    char *out = NULL;
    if (path[0] == '/')
        return strdup(path);
    if (!base || !*base) {
        if (!getcwd(cwd, sizeof cwd))
            return strdup(path);
        base = cwd;
    }
    if (asprintf(&out, "%s/%s", base, path) < 0)
        return NULL;
    return out;
}
