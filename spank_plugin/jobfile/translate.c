/* Translation of a job into a Slurm job (the plan) and its batch script: see batchai_jobfile.h. */
#include "batchai_jobfile.h"
#include "checks.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "azureml.h"
#include "azureml_plan.h"
#include "jsonv.h"
#include "sbuf.h"
#include "toolkit_steps.h"
#include "toolkits.h"

#define JOB_MOUNT_ROOT_VAR "AZ_BATCHAI_JOB_MOUNT_ROOT"
#define MOUNT_ROOT_VAR "AZ_BATCHAI_MOUNT_ROOT"

/* The path of a job field for messages: "properties.<field>". */
static void field_path(char *out, const char *field)
{
    jv_child(out, "properties", field);
}

static char *xstrdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The file's name without .json / .job.json (.yml / .yaml for an Azure ML job); for a plain "job.json", its directory's name (contrib/cifar/job.json
 * is the job "cifar"). */
static char *default_job_name(const char *file)
{
    const char *base = file ? strrchr(file, '/') : NULL;
    size_t n;
    char *name;

    base = base ? base + 1 : file;
    if (!base || !*base)
        return strdup("batchai-job");
    if (strcmp(base, "job.json") == 0 && base - file >= 2) {
        const char *dir = base - 1;
        while (dir > file && dir[-1] != '/')
            dir--;
        if (base - 1 > dir && strncmp(dir, "..", (size_t)(base - 1 - dir)) != 0 && dir[0] != '.')
            base = dir;
    }
    n = strcspn(base, "/");
    if (n > 9 && strncmp(base + n - 9, ".job.json", 9) == 0)
        n -= 9;
    else if (n > 5 && (strncmp(base + n - 5, ".json", 5) == 0 || strncmp(base + n - 5, ".yaml", 5) == 0))
        n -= 5;
    else if (n > 4 && strncmp(base + n - 4, ".yml", 4) == 0)
        n -= 4;
    if (n > 64)
        n = 64;
    name = strndup(base, n);
    /* The name lands in #SBATCH lines and paths: keep it to a safe alphabet. */
    for (char *p = name; p && *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            *p = '_';
    return name;
}

/* If s starts with $VAR or ${VAR} followed by '/' or the end, return the rest (after the variable). */
static const char *after_var(const char *s, const char *var)
{
    size_t n = strlen(var);

    if (s[0] != '$')
        return NULL;
    if (s[1] == '{' && strncmp(s + 2, var, n) == 0 && s[2 + n] == '}')
        s += n + 3;
    else if (strncmp(s + 1, var, n) == 0 && !isalnum((unsigned char)s[1 + n]) && s[1 + n] != '_')
        s += n + 1;
    else
        return NULL;
    return (*s == '/' || *s == '\0') ? s : NULL;
}

/* A path without '$', no ".." segment, made of characters safe in #SBATCH lines and --output patterns
 * (where '%' is special: only our own "%j" may appear). */
static bool safe_host_path(const char *p)
{
    for (const char *q = p; *q; q++)
        if (q[0] == '%' && q[1] == 'j')
            q++;
        else if (!isalnum((unsigned char)*q) && !strchr("/._-@+", *q))
            return false;
    for (const char *q = p; (q = strstr(q, "..")) != NULL; q += 2)
        if ((q == p || q[-1] == '/') && (q[2] == '\0' || q[2] == '/'))
            return false;
    return true;
}

/* Does mount path `rel` cover the start of `rest` ("/myshare/cifar" is covered by "myshare")? */
static size_t mount_covers(const char *rel, const char *rest)
{
    size_t n = strlen(rel);

    if (rest[0] != '/' || strncmp(rest + 1, rel, n) != 0 || (rest[1 + n] != '/' && rest[1 + n] != '\0'))
        return 0;
    return n + 1;
}

/* Resolve a Batch AI path to the host path behind it: through the job's mounts for
 * $AZ_BATCHAI_JOB_MOUNT_ROOT/<mount>/..., the cluster mount root, or an absolute path as is.
 * NULL (with a fault at `path`) when it cannot be resolved. */
static char *resolve_host_path(const struct bai_plan *plan, const struct bai_settings *site, const char *s,
                               const char *path, struct bai_diag *d)
{
    const char *rest;
    char *out = NULL;

    if ((rest = after_var(s, JOB_MOUNT_ROOT_VAR)) != NULL) {
        size_t best = 0, best_i = 0;
        for (size_t i = 0; i < plan->n_mounts; i++) {
            size_t n = plan->mounts[i].site_path ? mount_covers(plan->mounts[i].relative_path, rest) : 0;
            if (n > best) {
                best = n;
                best_i = i;
            }
        }
        if (best) {
            if (asprintf(&out, "%s%s", plan->mounts[best_i].site_path, rest + best) < 0)
                out = NULL;
        } else if (asprintf(&out, "%s/mounts%s", plan->job_dir, rest) < 0) {
            out = NULL;
        }
    } else if ((rest = after_var(s, MOUNT_ROOT_VAR)) != NULL) {
        if (asprintf(&out, "%s%s", site->mount_root, rest) < 0)
            out = NULL;
    } else if (s[0] == '/' && !strchr(s, '$')) {
        out = strdup(s);
    } else {
        bai_diag_add(d, path, "cannot resolve \"%.80s\" to a host path: expected an absolute path or one under "
                     "$" JOB_MOUNT_ROOT_VAR " or $" MOUNT_ROOT_VAR, s);
        return NULL;
    }
    if (!out) {
        bai_diag_add(d, path, "out of memory");
        return NULL;
    }
    while (strlen(out) > 1 && out[strlen(out) - 1] == '/')
        out[strlen(out) - 1] = '\0';
    if (!safe_host_path(out)) {
        bai_diag_add(d, path, "\"%.80s\" resolves to a path with \"..\" or characters other than letters, digits "
                     "and / . _ - @ +", s);
        free(out);
        return NULL;
    }
    return out;
}

/* The job's view of a path: the mount-root variables replaced by their values (the "%j" patterns);
 * anything else is kept verbatim, as Batch AI passes it to the job. */
static char *job_view(const struct bai_plan *plan, const struct bai_settings *site, const char *s)
{
    const char *rest;
    char *out;

    if ((rest = after_var(s, JOB_MOUNT_ROOT_VAR)) != NULL)
        return asprintf(&out, "%s/mounts%s", plan->job_dir, rest) < 0 ? NULL : out;
    if ((rest = after_var(s, MOUNT_ROOT_VAR)) != NULL)
        return asprintf(&out, "%s%s", site->mount_root, rest) < 0 ? NULL : out;
    return strdup(s);
}

/* value may be NULL only for a secret (a key-vault reference). */
static int add_env(struct bai_plan *plan, size_t cap, const char *name, char *value, int secret)
{
    if (plan->n_env >= cap || (!value && !secret)) {
        free(value);
        return -1;
    }
    plan->env[plan->n_env].name = strdup(name);
    plan->env[plan->n_env].value = value;
    plan->env[plan->n_env].secret = secret;
    if (!plan->env[plan->n_env].name) {
        free(value);
        return -1;
    }
    plan->n_env++;
    return 0;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    char *out;
    int n;

    va_start(ap, f);
    n = vasprintf(&out, f, ap);
    va_end(ap);
    return n < 0 ? NULL : out;
}

/* The user's directory for share `name` in "NAME=DIR,..." (checked by user_shares_check), or NULL. New. */
static char *user_share_dir(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (eq && (size_t)(eq - p) == n && strncmp(p, name, n) == 0)
            return strndup(eq + 1, len - n - 1);
        p += len + (p[len] == ',');
    }
    return NULL;
}

/* The user's share maps must be NAME=DIR words (a plain name, an absolute directory of the safe alphabet
 * without ".."), each name once, and allowed by the site. */
static void user_shares_check(const char *list, const struct bai_settings *site, struct bai_diag *d)
{
    int count = 0;
    if (!list || !*list)
        return;
    if (!site->user_shares) {
        bai_diag_add(d, "--batchai-share", "share maps of your own are turned off on this site (user_shares=no): "
                     "ask the admins to map the share (share.NAME=DIR)");
        return;
    }
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        char name[128], *dir = NULL, *again = NULL, *later = NULL;
        bool ok = eq && eq > p && (size_t)(eq - p) < sizeof name && len > (size_t)(eq - p) + 1;
        if (ok) {
            memcpy(name, p, (size_t)(eq - p));
            name[eq - p] = '\0';
            dir = strndup(eq + 1, len - (size_t)(eq - p) - 1);
            for (const char *c = name; *c && ok; c++)
                ok = isalnum((unsigned char)*c) || strchr("._-", *c);
            ok = ok && dir && dir[0] == '/' && !strstr(dir, "%j") && safe_host_path(dir);
            again = ok ? user_share_dir(list, name) : NULL;
            later = ok ? user_share_dir(p + len, name) : NULL;
            ok = ok && again && strcmp(again, dir) == 0 && !later;
        }
        if (!ok)
            bai_diag_add(d, "--batchai-share", "\"%.*s\": expected NAME=DIR, a share's name once and an absolute "
                         "directory of letters, digits and / . _ - @ + (several: NAME=DIR,NAME=DIR)",
                         (int)(len > 200 ? 200 : len), p);
        free(dir);
        free(again);
        free(later);
        if (++count > BAI_USER_SHARES_MAX) {
            bai_diag_add(d, "--batchai-share", "more than %d share maps", BAI_USER_SHARES_MAX);
            return;
        }
        p += len + (p[len] == ',');
    }
}

static void plan_mounts(struct bai_plan *plan, const struct bai_job *job, const struct bai_settings *site,
                        const char *user_shares, struct bai_diag *d)
{
    size_t group_index[4] = { 0 };
    char path[JV_PATH_MAX], group[JV_PATH_MAX];

    plan->mounts = calloc(job->n_mounts + 1, sizeof *plan->mounts);
    if (!plan->mounts) {
        bai_diag_add(d, "", "out of memory");
        return;
    }
    for (size_t i = 0; i < job->n_mounts; i++) {
        const struct bai_mount *m = &job->mounts[i];
        struct bai_plan_mount *pm = &plan->mounts[plan->n_mounts++];
        jv_child(group, "properties.mountVolumes", bai_mount_kind_names[m->kind]);
        jv_item(path, group, group_index[m->kind]++);
        pm->kind = m->kind;
        pm->where = strdup(m->where ? m->where : path);
        pm->share = xstrdup_or_null(m->share);
        pm->relative_path = strdup(m->relative_path);
        pm->target = fmt("%s/mounts/%s", plan->job_dir, m->relative_path);
        if (m->kind == BAI_MOUNT_UNMANAGED) {
            /* Whether the site runs it is decided at submit time: bai_plan_check_host(). */
            pm->mount_command = strdup(m->source);
            plan->mount_commands_allowed = site->allow_mount_command;
            continue;
        }
        char *share = site->user_shares ? user_share_dir(user_shares, m->share) : NULL;
        pm->user_dir = share != NULL;
        pm->user_maps = site->user_shares;
        if (!share)
            share = bai_settings_share_path(site, m->share);
        pm->site_path = (share && m->source_dir) ? fmt("%s/%s", share, m->source_dir + (m->source_dir[0] == '/'))
                                                 : xstrdup_or_null(share);
        free(share);
        if (pm->site_path && !safe_host_path(pm->site_path))
            bai_diag_add(d, path, "share \"%s\" maps to an unusable site path", m->share);
    }
}

/* job_out: the job's own directory beside its logs (<prefix>/<job name>/%j), shared by all nodes when the
 * prefix is on a share. */
static void plan_env(struct bai_plan *plan, const struct bai_job *job, const struct bai_settings *site,
                     const char *job_out, struct bai_diag *d)
{
    size_t cap = 16 + job->n_inputs + job->n_outputs + job->n_env + (job->aml ? job->aml->n_io : 0);
    int rc = 0;

    plan->env = calloc(cap, sizeof *plan->env);
    if (!plan->env) {
        bai_diag_add(d, "", "out of memory");
        return;
    }
    rc |= add_env(plan, cap, "AZ_BATCHAI_JOB_NAME", strdup(plan->job_name), 0);
    rc |= add_env(plan, cap, JOB_MOUNT_ROOT_VAR, fmt("%s/mounts", plan->job_dir), 0);
    rc |= add_env(plan, cap, MOUNT_ROOT_VAR, strdup(site->mount_root), 0);
    rc |= add_env(plan, cap, "AZ_BATCHAI_STDOUTERR_DIR", strdup(plan->log_dir), 0);
    rc |= add_env(plan, cap, "AZ_BATCHAI_JOB_TEMP", strdup(plan->job_temp), 0);
    rc |= add_env(plan, cap, "AZ_BATCHAI_SHARED_JOB_TEMP", fmt("%s/shared", job_out), 0);
    /* What the job asks per node; the plugin sets each task's to what Slurm allocated on its node. */
    rc |= add_env(plan, cap, "AZ_BATCHAI_NUM_GPUS", fmt("%d", plan->gpus_per_node), 0);
    rc |= add_env(plan, cap, "AZ_BATCHAI_MPI_HOST_FILE", fmt("%s/hostfile", plan->job_dir), 0);
    for (size_t i = 0; i < job->n_inputs; i++) {
        char name[160];
        snprintf(name, sizeof name, "AZ_BATCHAI_INPUT_%s", job->inputs[i].id);
        rc |= add_env(plan, cap, name, job_view(plan, site, job->inputs[i].path), 0);
    }
    for (size_t i = 0; i < job->n_outputs; i++) {
        const struct bai_dir *o = &job->outputs[i];
        char name[160], *prefix = job_view(plan, site, o->path);
        snprintf(name, sizeof name, "AZ_BATCHAI_OUTPUT_%s", o->id);
        /* Batch AI: pathPrefix / jobOutputDirectoryPathSegment / pathSuffix; our segment is <job>/<jobid>. */
        rc |= add_env(plan, cap, name, prefix ? fmt("%s/%s/%%j/outputs%s%s", prefix, plan->job_name,
                                                      o->suffix ? "/" : "", o->suffix ? o->suffix : "") : NULL, 0);
        free(prefix);
    }
    for (size_t i = 0, secret = 0; i < job->n_env; i++) {
        const struct bai_env *e = &job->env[i];
        if (e->secret && !e->value) /* a key-vault reference: refused by bai_plan_check_policy() */
            rc |= add_env(plan, cap, e->name, NULL, 1);
        else
            rc |= add_env(plan, cap, e->name, strdup(e->value), e->secret);
        if (e->secret && rc == 0) {
            char where[JV_PATH_MAX];
            jv_item(where, "properties.secrets", secret++);
            rc |= !(plan->env[plan->n_env - 1].where = strdup(where));
        }
    }
    if (rc)
        bai_diag_add(d, "", "out of memory");
}

/* The main step: the toolkit's (toolkit_steps.h). */
static char *plan_main_step(const struct bai_plan *plan, const struct bai_job *job, const struct bai_settings *site,
                            struct bai_diag *d)
{
    struct sbuf b = { 0 };
    if (!bai_toolkit_main_step(&b, plan, job, site, bai_job_task_count(job))) {
        bai_diag_add(d, "", "%s: no main step for this toolkit (toolkit_steps.c)", job->toolkit.kind->property);
        free(sb_finish(&b));
        return NULL;
    }
    return sb_finish(&b);
}

/* The srun option that runs each step in the job's image, as shell text: its value (an image reference, a
 * registry and a reference, or a bundle directory) is one quoted word, so even a string the validator would
 * refuse reaches srun whole and is never run by the batch script's shell. */
static void plan_container(struct bai_plan *plan, const struct bai_job *job, const char *image,
                           const struct bai_settings *site, struct bai_diag *d)
{
    struct sbuf b = { 0 };
    char path[JV_PATH_MAX], *target, *with_registry = NULL;
    const char *value;

    if (job->aml)
        snprintf(path, sizeof path, "environment%s", job->image ? ".image" : "");
    else
        field_path(path, "containerSettings.imageSourceRegistry.image");
    if (site->runtime == BAI_RUNTIME_NONE) {
        bai_diag_add(d, path, "this site runs no containers (container_runtime=none): remove %s or ask the admins "
                     "for a container runtime", job->aml ? "environment" : "containerSettings");
        return;
    }
    target = bai_settings_image_target(site, image);
    if (site->runtime == BAI_RUNTIME_PYXIS) {
        /* pyxis (enroot) names an image of a given registry REGISTRY#IMAGE, REGISTRY a host[:port]: the
         * serverUrl loses its scheme and path, and the image the registry host the recipes repeat in it
         * ("myreg.azurecr.io/name:tag"). */
        if (job->registry_server) {
            const char *host = job->registry_server;
            host += strncmp(host, "https://", 8) == 0 ? 8 : strncmp(host, "http://", 7) == 0 ? 7 : 0;
            size_t n = strcspn(host, "/");
            const char *short_image = image;
            if (strncmp(short_image, host, n) == 0 && short_image[n] == '/')
                short_image += n + 1;
            with_registry = fmt("%.*s#%s", (int)n, host, short_image);
        }
        value = job->registry_server ? with_registry : target;
        sb_puts(&b, "--container-image=");
    } else if (target && safe_host_path(target)) {
        plan->bundle = strdup(target);
        value = plan->bundle;
        sb_puts(&b, "--container=");
    } else {
        bai_diag_add(d, path, "image \"%.80s\" has no usable bundle directory (set image.%.80s=DIR)", image, image);
        free(target);
        return;
    }
    if (value) {
        sb_shell_quote(&b, value);
        plan->container_arg = fmt("%s%s", site->runtime == BAI_RUNTIME_PYXIS ? "--container-image=" : "--container=",
                                  value);
    } else
        b.failed = true;
    plan->container = sb_finish(&b);
    if (!plan->container || !plan->container_arg) {
        free(plan->container);
        free(plan->container_arg);
        plan->container = plan->container_arg = NULL;
        bai_diag_add(d, path, "out of memory");
    }
    free(with_registry);
    free(target);
}

/* Whether s can be written as a value on an #SBATCH line: printable ASCII without the white space, quotes,
 * backslash and '#' that sbatch reads there as separators, quoting or the start of a comment (render.c). */
static bool sbatch_value_ok(const char *s)
{
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || strchr("\"'\\#", *p))
            return false;
    return true;
}

/* The GPUs per node: the Azure ML job's instance_type.NAME, else its cluster's gpus.ID (a mapped cluster
 * only), else gpus_per_node. Ranks (MPI, PyTorch, an Azure ML job's processes) each get a GPU of their own, so
 * a node cannot run more of them than it has GPUs. */
static void plan_gpus(struct bai_plan *plan, const struct bai_job *job, const char *name,
                      const struct bai_settings *site, struct bai_diag *d)
{
    const char *value = NULL, *itype;
    struct bai_gpus g = { .count = site->gpus_per_node };
    int tasks = bai_job_task_count(job);

    itype = job->aml ? job->aml->instance_type : NULL;
    if (itype && !(value = bai_settings_instance_gpus(site, itype))) {
        bai_diag_add(d, "resources.instance_type", "\"%.80s\" is not mapped on this site: remove instance_type "
                     "and use compute (mapped to a partition and its GPUs by the site), or ask the admins for "
                     "instance_type.%.80s=N (GPUs per node)", itype, itype);
        return;
    }
    if (itype)
        plan->origin.gpu_setting = fmt("instance_type.%s", itype);
    else if (name && bai_settings_cluster_partition(site, name) && (value = bai_settings_cluster_gpus(site, name)))
        plan->origin.gpu_setting = fmt("gpus.%s", name);
    else if (site->gpus_per_node)
        plan->origin.gpu_setting = strdup("gpus_per_node");
    if (value && bai_gpus_parse(value, &g) != 0) /* checked when the setting was read */
        return;
    plan->gpus_per_node = g.count;
    plan->gpu_type = g.type[0] ? strdup(g.type) : NULL;
    if (!g.count)
        return;
    if (job->aml)
        plan->gpu_per_rank = job->aml->dist == BAI_AML_MPI || job->aml->dist == BAI_AML_PYTORCH ||
                             job->aml->per_node > 1;
    else /* the toolkits whose tasks are ranks: all but one-task ones and TensorFlow's servers and workers */
        plan->gpu_per_rank = tasks > 1 && strcmp(job->toolkit.kind->property, "tensorFlowSettings") != 0;
    if (!plan->gpu_per_rank)
        return;
    plan->ranks_min = job->aml ? job->aml->per_node : tasks / job->node_count;
    plan->ranks_max = job->aml ? job->aml->per_node : (tasks + job->node_count - 1) / job->node_count;
    if (plan->ranks_max > g.count) {
        if (job->aml)
            bai_diag_add(d, "distribution.process_count_per_instance", "%d processes per node, each with a GPU of "
                         "its own, but the nodes of compute \"%.80s\" have %d GPU(s) (%s): ask for at most %d",
                         plan->ranks_max, name ? name : "(none)", g.count, plan->origin.gpu_setting, g.count);
        else {
            char path[JV_PATH_MAX], tk[JV_PATH_MAX];
            jv_child(tk, "properties", job->toolkit.kind->property);
            jv_child(path, tk, "processCount");
            bai_diag_add(d, path, "processCount %d over nodeCount %d is up to %d ranks per node, each with a "
                         "GPU of its own, but the nodes of %s have %d GPU(s) (%s): ask for at most %d processes, or "
                         "more nodes", tasks, job->node_count, plan->ranks_max,
                         name ? "this cluster" : "this site's partition", g.count, plan->origin.gpu_setting,
                         g.count * job->node_count);
        }
    }
}

/* The last segment of a cluster's id ("/subscriptions/.../clusters/nc6" -> "nc6"): the name the site maps. */
static const char *cluster_name(const char *id)
{
    const char *slash = id ? strrchr(id, '/') : NULL;
    return slash ? slash + 1 : id;
}

/* The job's cluster: the one given on the command line (sbatch --batchai-cluster, batchai-job --cluster, as
 * az batchai job create --cluster), else the file's cluster.id (an Azure ML job's compute). Both given, they
 * must name the same cluster. Sets plan->origin.cluster_id and cluster_given; returns the name, or NULL. */
static const char *plan_cluster(struct bai_plan *plan, const struct bai_job *job, const char *given,
                                struct bai_diag *d)
{
    const char *field = job->aml ? "compute" : "properties.cluster.id";
    if (given && !*given) {
        bai_diag_add(d, "", "--cluster: expected a cluster's name or id, got an empty value");
        return NULL;
    }
    if (given && job->cluster_id && strcmp(cluster_name(given), cluster_name(job->cluster_id)) != 0) {
        bai_diag_add(d, field, "the file names cluster \"%.80s\", but --cluster names \"%.80s\": give the "
                     "file's cluster, or remove %s from the file to choose the cluster on the command line",
                     cluster_name(job->cluster_id), cluster_name(given), job->aml ? "compute" : "cluster.id");
        return NULL;
    }
    plan->origin.cluster_given = given != NULL;
    plan->origin.cluster_id = xstrdup_or_null(given ? given : job->cluster_id);
    return cluster_name(plan->origin.cluster_id);
}

static void plan_allocation(struct bai_plan *plan, const struct bai_job *job, const char *cluster,
                            const struct bai_settings *site, struct bai_diag *d)
{
    const struct bai_prio_map *prio = &site->priority[job->priority];

    plan->nodes = job->node_count;
    /* Slurm allocates at least one task per node; steps that want fewer (customToolkit) say so themselves. */
    plan->ntasks = bai_job_task_count(job) > job->node_count ? bai_job_task_count(job) : job->node_count;
    plan->time_limit_seconds = job->max_wall_seconds;
    const char *name = plan_cluster(plan, job, cluster, d);
    if (name) {
        const char *part = bai_settings_cluster_partition(site, name);
        plan->partition = xstrdup_or_null(part);
        plan->origin.cluster_mapped = part != NULL;
        if (!part && site->unmapped_cluster == BAI_UNMAPPED_REFUSE)
            bai_diag_add(d, plan->origin.cluster_given ? "" : job->aml ? "compute" : "properties.cluster.id",
                         "%s \"%.80s\" is not mapped to a partition on this site: ask the admins for "
                         "cluster.%.80s=PARTITION (or unmapped_cluster=partition, to run such jobs on the default "
                         "partition)", plan->origin.cluster_given ? "--cluster" : job->aml ? "compute" : "cluster",
                         name, name);
    }
    if (!plan->partition && site->partition)
        plan->partition = strdup(site->partition);
    plan_gpus(plan, job, name, site, d);
    if (prio->kind == BAI_PRIO_QOS)
        plan->qos = strdup(prio->qos);
    else if (prio->kind == BAI_PRIO_NICE)
        plan->nice = prio->nice;
    /* The site's values, not the job's; the job name and log directory are checked by safe_host_path(). */
    if (plan->partition && !sbatch_value_ok(plan->partition))
        bai_diag_add(d, "", "the site's partition \"%.80s\" cannot be an #SBATCH value (white space, quotes, \\ "
                     "or #)", plan->partition);
    if (plan->qos && !sbatch_value_ok(plan->qos))
        bai_diag_add(d, "", "the site's QOS \"%.80s\" cannot be an #SBATCH value (white space, quotes, \\ or #)",
                     plan->qos);
    const char *image = job->aml ? bai_aml_image(job, site, d) : job->image;
    if (image) {
        free(plan->origin.image);
        plan->origin.image = strdup(image);
        plan_container(plan, job, image, site, d);
    }
}

int bai_translate_all(const struct bai_job *job, const struct bai_settings *site,
                      const struct bai_translate_opts *opts, struct bai_plan *plan, struct bai_diag *d)
{
    size_t before = bai_diag_total(d);
    char path[JV_PATH_MAX];
    char *prefix, *job_out, *file_dir = NULL;

    memset(plan, 0, sizeof *plan);
    plan->origin.node_count = job->node_count;
    plan->origin.process_count_given = bai_toolkit_int(&job->toolkit, "processCount") != 0;
    plan->origin.default_wall_time = job->max_wall_seconds == BAI_JOB_DEFAULT_WALL_SECONDS;
    plan->origin.toolkit = job->aml ? NULL : job->toolkit.kind->property;
    plan->origin.aml = job->aml != NULL;
    plan->origin.out_err_prefix = xstrdup_or_null(job->std_out_err_prefix);
    plan->origin.image = xstrdup_or_null(job->image);
    plan->origin.shm_size = xstrdup_or_null(job->shm_size);
    plan->job_name = opts && opts->job_name ? strdup(opts->job_name) : default_job_name(opts ? opts->job_file : NULL);
    plan->job_dir = fmt("%s/%%j", site->job_root);
    plan->job_temp = fmt("%s/%%j.%%N", site->job_temp);
    if (!plan->job_name || !plan->job_dir || !plan->job_temp) {
        bai_diag_add(d, "", "out of memory");
        goto out;
    }
    if (!safe_host_path(plan->job_dir)) {
        bai_diag_add(d, "", "job_root \"%.80s\": expected letters, digits and / . _ - @ +", site->job_root);
        goto out;
    }
    if (!safe_host_path(site->job_temp)) { /* the "/%j.%N" after it is ours */
        bai_diag_add(d, "", "job_temp \"%.80s\": expected letters, digits and / . _ - @ +", site->job_temp);
        goto out;
    }
    if (!safe_host_path(plan->job_name) || strchr(plan->job_name, '/')) {
        bai_diag_add(d, "", "job name \"%.64s\": expected letters, digits, '.', '_', '-'", plan->job_name);
        goto out;
    }
    /* The main step writes it as the job's own pythonInterpreterPath: one word in double quotes. */
    if (!bai_shell_path_ok(site->python))
        bai_diag_add(d, "", "the site's python \"%.80s\" cannot be one shell word (no \" \\ ` and $ only as "
                     "$NAME or ${NAME})", site->python);
    plan_allocation(plan, job, opts ? opts->cluster : NULL, site, d);
    user_shares_check(opts ? opts->user_shares : NULL, site, d);
    plan_mounts(plan, job, site, opts ? opts->user_shares : NULL, d);
    field_path(path, "stdOutErrPathPrefix");
    /* An Azure ML job's logs are kept beside its file, as Batch AI kept them under stdOutErrPathPrefix. */
    file_dir = job->aml ? bai_aml_file_dir(opts ? opts->job_file : NULL, d) : NULL;
    prefix = job->aml ? (file_dir ? resolve_host_path(plan, site, file_dir, "", d) : NULL)
                      : resolve_host_path(plan, site, job->std_out_err_prefix, path, d);
    job_out = prefix ? fmt("%s/%s/%%j", prefix, plan->job_name) : NULL;
    plan->log_dir = job_out ? fmt("%s/stdouterr", job_out) : NULL;
    if (plan->log_dir)
        plan_env(plan, job, site, job_out, d);
    if (job->aml && plan->log_dir)
        bai_aml_plan(plan, job, site, file_dir, job_out, d);
    /* Where batchai-job list and status find the experiment (its characters were checked by the parser). */
    if (job->aml && job->aml->experiment)
        plan->comment = fmt(BAI_EXPERIMENT_TAG "%s", job->aml->experiment);
    /* Azure ML shows display_name as the run's name: squeue and batchai-job list show it as the job's. The
     * job name proper stays the file's (or the one given): the log directory and AZ_BATCHAI_JOB_NAME. */
    if (job->aml && job->aml->display_name && job->aml->display_name[0] && !(opts && opts->job_name) &&
        !(plan->display_name = strdup(job->aml->display_name)))
        bai_diag_add(d, "", "out of memory");
    free(prefix);
    free(job_out);
    free(file_dir);
    for (size_t i = 0; i < job->n_env && !plan->secrets_file; i++)
        if (job->env[i].secret && job->env[i].value)
            plan->secrets_file = fmt("%s/secrets.env", plan->job_dir);
    plan->prep_command = xstrdup_or_null(job->prep_command);
    if (!job->aml)
        plan->main_step = plan_main_step(plan, job, site, d);
    plan->signal_before_limit = job->checkpointable ? BAI_CHECKPOINT_WARNING_SECONDS : 0;
    if ((!plan->main_step && bai_diag_total(d) == before) || (job->prep_command && !plan->prep_command))
        bai_diag_add(d, "", "out of memory");
out:
    return bai_diag_total(d) > before ? -1 : 0;
}

int bai_translate(const struct bai_job *job, const struct bai_settings *site, const struct bai_translate_opts *opts,
                  struct bai_plan *plan, struct bai_diag *d)
{
    if (bai_translate_all(job, site, opts, plan, d) == 0)
        return 0;
    bai_plan_free(plan);
    return -1;
}

int bai_plan_check_policy(const struct bai_plan *plan, struct bai_diag *d)
{
    size_t before = bai_diag_total(d);

    for (size_t i = 0; i < plan->n_mounts; i++)
        if (plan->mounts[i].mount_command && !plan->mount_commands_allowed)
            bai_diag_add(d, plan->mounts[i].where, "mountCommand is not allowed on this site (allow_mount_command=no): "
                         "ask the admins to map the file system to a share instead");
    for (size_t i = 0; i < plan->n_env; i++)
        if (plan->env[i].secret && !plan->env[i].value)
            bai_diag_add(d, plan->env[i].where, "secret \"%s\" refers to an Azure Key Vault, which this site cannot "
                         "read: give its value in the file (values of secrets are never logged or stored by Slurm)",
                         plan->env[i].name);
    return bai_diag_total(d) > before ? -1 : 0;
}

/* The job's log directory is made on the batch node, as the user, under the prefix: where the prefix's
 * nearest existing directory on this host is not the user's to write in, the job could only fail there (with
 * Slurm's 0:53 and the reason in slurmd's log), so it is refused here. access() answers for the real user,
 * who runs sbatch and batchai-job. */
static void check_log_prefix(const struct bai_plan *plan, struct bai_diag *d)
{
    char dir[JV_PATH_MAX], path[JV_PATH_MAX];
    const char *cut = plan->log_dir ? strstr(plan->log_dir, "/%j/") : NULL;
    struct stat st;
    if (!cut || (size_t)(cut - plan->log_dir) >= sizeof dir)
        return;
    snprintf(dir, sizeof dir, "%.*s", (int)(cut - plan->log_dir), plan->log_dir);
    for (char *slash; stat(dir, &st) != 0 && (slash = strrchr(dir, '/')) != NULL;)
        *(slash == dir ? slash + 1 : slash) = '\0';
    if (plan->origin.aml)
        path[0] = '\0';
    else
        field_path(path, "stdOutErrPathPrefix");
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        bai_diag_add(d, path, "the log directory %s cannot be made: %s is not a directory", plan->log_dir, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        bai_diag_add(d, path, "the log directory %s cannot be made: %s is not writable by you; give a prefix on "
                     "a share you can write (e.g. $AZ_BATCHAI_JOB_MOUNT_ROOT/<share>/logs)", plan->log_dir, dir);
}

/* The plan's value of the task variable `name`, or NULL. */
static const char *plan_env_value(const struct bai_plan *plan, const char *name)
{
    for (size_t i = 0; i < plan->n_env; i++)
        if (strcmp(plan->env[i].name, name) == 0)
            return plan->env[i].value;
    return NULL;
}

/* Is `dir` (a "%j"-pattern path the job makes on its nodes: its log directory, an output directory) on a
 * mount that is there? Under the job's mounts it must be under one of them (the job's mount directory holds
 * only their links); under the site's mount_root, on a mount that exists here, as the nodes have them. Says
 * which mount is missing, at `path` (what the user wrote), instead of the "cannot create ... Permission
 * denied" the node would give when the job starts. Returns false after adding a fault. */
static bool dir_on_a_mount(const struct bai_plan *plan, const char *dir, const char *what, const char *path,
                           struct bai_diag *d)
{
    const char *job_mounts = plan_env_value(plan, JOB_MOUNT_ROOT_VAR), *mount_root = plan_env_value(plan, MOUNT_ROOT_VAR);
    size_t n;
    if (job_mounts && (n = strlen(job_mounts)) && strncmp(dir, job_mounts, n) == 0 && dir[n] == '/') {
        for (size_t i = 0; i < plan->n_mounts; i++) {
            size_t t = strlen(plan->mounts[i].target);
            if (strncmp(dir, plan->mounts[i].target, t) == 0 && (dir[t] == '/' || dir[t] == '\0'))
                return true;
        }
        const char *rel = dir + n + 1;
        char names[512] = "";
        for (size_t i = 0, len = 0; i < plan->n_mounts && len < sizeof names; i++)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", plan->mounts[i].relative_path);
        bai_diag_add(d, path, "%s is on $" JOB_MOUNT_ROOT_VAR "/%.*s, which is not mounted: no mountVolumes entry "
                     "has relativeMountPath \"%.*s\" (the job mounts %s): give a path on one of the job's mounts",
                     what, (int)strcspn(rel, "/"), rel, (int)strcspn(rel, "/"), rel, names[0] ? names : "nothing");
        return false;
    }
    if (mount_root && (n = strlen(mount_root)) && strncmp(dir, mount_root, n) == 0 && dir[n] == '/') {
        char top[JV_PATH_MAX];
        struct stat st;
        snprintf(top, sizeof top, "%.*s", (int)(n + 1 + strcspn(dir + n + 1, "/")), dir);
        if (stat(top, &st) == 0 && S_ISDIR(st.st_mode))
            return true;
        bai_diag_add(d, path, "%s is on $" MOUNT_ROOT_VAR "/%s, which is not mounted on this cluster (no directory "
                     "%s; mount_root is %s): give a path on a share the job mounts, or ask the admins for that "
                     "mount", what, top + n + 1, top, mount_root);
        return false;
    }
    return true;
}

/* Every directory the job makes on its nodes under a mount: the log directory and the output directories.
 * Returns whether the log directory is on a mount (else check_log_prefix's "not writable" would only blame
 * the directory above the missing mount). */
static bool check_mounts_of_dirs(const struct bai_plan *plan, struct bai_diag *d)
{
    char path[JV_PATH_MAX];
    bool log_ok = true;
    if (plan->log_dir && !plan->origin.aml) {
        field_path(path, "stdOutErrPathPrefix");
        log_ok = dir_on_a_mount(plan, plan->log_dir, "the log directory", path, d);
        /* On a share whose directory is not here: the share's own fault says so (its "not available"), and
         * the directory above it is not the one to blame. */
        for (size_t i = 0; log_ok && i < plan->n_mounts; i++) {
            const struct bai_plan_mount *m = &plan->mounts[i];
            size_t n = m->site_path ? strlen(m->site_path) : 0;
            struct stat st;
            if (n && strncmp(plan->log_dir, m->site_path, n) == 0 && plan->log_dir[n] == '/' &&
                (stat(m->site_path, &st) != 0 || !S_ISDIR(st.st_mode)))
                log_ok = false;
        }
    }
    /* In the file's order (plan_env), so the k-th is outputDirectories[k]. */
    for (size_t i = 0, k = 0; i < plan->n_env && !plan->origin.aml; i++) {
        const struct bai_plan_env *e = &plan->env[i];
        if (strncmp(e->name, "AZ_BATCHAI_OUTPUT_", 18) != 0)
            continue;
        char what[256], item[JV_PATH_MAX];
        snprintf(what, sizeof what, "output directory \"%.80s\"", e->name + 18);
        field_path(path, "outputDirectories");
        jv_item(item, path, k++);
        jv_child(path, item, "pathPrefix");
        if (e->value)
            (void)dir_on_a_mount(plan, e->value, what, path, d);
    }
    return log_ok;
}

/* An Azure ML job's code is a directory of this host: one that is missing (a job file copied without its
 * code, as the reference jobs' src/) could only fail on the node. (Its inputs may not exist yet: a pipeline
 * step's are the outputs of steps that run before it.) */
static void check_aml_paths(const struct bai_plan *plan, struct bai_diag *d)
{
    struct stat st;

    if (plan->origin.aml && plan->workdir && (stat(plan->workdir, &st) != 0 || !S_ISDIR(st.st_mode)))
        bai_diag_add(d, "code", "the code directory %s does not exist here: copy or clone the job's code there",
                     plan->workdir);
}

int bai_plan_check_host(const struct bai_plan *plan, struct bai_diag *d)
{
    size_t before = bai_diag_total(d);
    char path[JV_PATH_MAX];
    struct stat st;

    (void)bai_plan_check_policy(plan, d);
    if (check_mounts_of_dirs(plan, d))
        check_log_prefix(plan, d);
    check_aml_paths(plan, d);
    for (size_t i = 0; i < plan->n_mounts; i++) {
        const struct bai_plan_mount *m = &plan->mounts[i];
        if (m->user_dir) {
            /* The allocator and batchai-job run as the user: the kernel judges the user's own rights. */
            if (stat(m->site_path, &st) != 0 || !S_ISDIR(st.st_mode) || access(m->site_path, R_OK | X_OK) != 0)
                bai_diag_add(d, m->where, "share \"%s\" maps to %s (--batchai-share), which is not a directory "
                             "you can read: map it to one of yours", m->share, m->site_path);
        } else if (m->site_path && (stat(m->site_path, &st) != 0 || !S_ISDIR(st.st_mode)))
            bai_diag_add(d, m->where, "share \"%s\" is not available on this cluster (no directory %s): ask the "
                         "admins to map it (share.%s=DIR)%s%s%s", m->share, m->site_path, m->share,
                         m->user_maps ? ", or map it to a directory of yours (--batchai-share=" : "",
                         m->user_maps ? m->share : "", m->user_maps ? "=DIR)" : "");
    }
    if (plan->bundle) {
        char config[4096];
        snprintf(config, sizeof config, "%s/config.json", plan->bundle);
        if (stat(config, &st) != 0) {
            jv_child(path, "properties", "containerSettings.imageSourceRegistry.image");
            bai_diag_add(d, path, "image \"%s\" is not staged on this cluster (no OCI bundle at %s): ask the "
                         "admins to stage it (contrib/stage-oci-bundle) or map it (image.IMAGE=DIR)",
                         plan->origin.image, plan->bundle);
        }
    }
    return bai_diag_total(d) > before ? -1 : 0;
}
