/* batchai-job check-site and check-node: see check_site.h. */
#include "check_site.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node/rootfs.h"
#include "jobfile/batchai_jobfile.h"
#include "strbuf.h"
#include "slurm_read.h"

static int problems;

static void report(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(const char *level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%-4s ", level);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    if (strcmp(level, "FAIL") == 0)
        problems++;
}

/* The value of `Key = Value` in scontrol show config's output, or NULL. */
static char *config_value(const char *config, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = config; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, key, klen) != 0 || (p[klen] != ' ' && p[klen] != '='))
            continue;
        const char *v = strchr(p, '=');
        if (!v)
            continue;
        v++;
        while (*v == ' ')
            v++;
        return strndup(v, strcspn(v, "\n"));
    }
    return NULL;
}

/* The output and messages of argv, run without a shell (slurm_read.h); *status gets its exit status. */
static char *run_capture(char *const argv[], int *status)
{
    char *out;
    *status = bai_run_merged(argv, &out);
    return out;
}

/* What the plugstack says about spank_batchai.so. */
struct plug_line {
    char *file;            /* the file that holds the line */
    char *args;            /* the arguments after the .so path, NULL when no line names the plugin */
    bool via_include;      /* reached through an include */
    bool include_has_dir;  /* ... whose pattern holds a '/': configless does not ship it */
};

/* Find the plugin's line in `path` as Slurm's spank.c does: "required|optional PATH ARGS" lines and
 * "include PATTERN" (relative to the file's directory), globbed. */
static void plugstack_scan(const char *path, struct plug_line *pl, bool via_include, bool include_has_dir, int depth)
{
    FILE *f = fopen(path, "re");
    char line[8192];
    if (!f || depth > 8) {
        if (f)
            fclose(f);
        return;
    }
    while (!pl->args && fgets(line, sizeof line, f)) {
        line[strcspn(line, "#\n")] = '\0';
        char *save = NULL, *kind = strtok_r(line, " \t", &save), *what = kind ? strtok_r(NULL, " \t", &save) : NULL;
        if (!what)
            continue;
        if (strcmp(kind, "include") == 0) {
            char pattern[PATH_MAX], dir[PATH_MAX];
            snprintf(dir, sizeof dir, "%s", path);
            if (what[0] == '/')
                snprintf(pattern, sizeof pattern, "%s", what);
            else
                snprintf(pattern, sizeof pattern, "%s/%s", dirname(dir), what);
            glob_t g;
            if (glob(pattern, 0, NULL, &g) == 0)
                for (size_t i = 0; i < g.gl_pathc && !pl->args; i++)
                    plugstack_scan(g.gl_pathv[i], pl, true, include_has_dir || strchr(what, '/'), depth + 1);
            globfree(&g);
        } else if ((strcmp(kind, "required") == 0 || strcmp(kind, "optional") == 0) &&
                   strstr(what, "spank_batchai")) {
            pl->file = strdup(path);
            pl->args = strdup(save ? save : "");
            pl->via_include = via_include;
            pl->include_has_dir = include_has_dir;
        }
    }
    fclose(f);
}

/* Slurm's side: PrologFlags, the plugstack line and its settings, the configless pitfalls. Fills `site`;
 * returns false when the probe step cannot mean anything (no plugin line, bad settings). */
static bool check_config(const char *config, struct bai_settings *site)
{
    bool ok = true;
    char *flags = config_value(config, "PrologFlags");
    if (flags && strstr(flags, "Alloc"))
        report("ok", "PrologFlags=%s has Alloc (the prolog prepares nodes before the batch script starts)", flags);
    else
        report("FAIL", "PrologFlags=%s lacks Alloc: set PrologFlags=Alloc in slurm.conf, or the batch step opens "
               "its output before the plugin has made the log directory", flags ? flags : "(none)");
    free(flags);

    char *conf = config_value(config, "SLURM_CONF");
    char *plugstack = config_value(config, "PlugStackConfig");
    char dflt[PATH_MAX], dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", conf ? conf : "/etc/slurm/slurm.conf");
    snprintf(dflt, sizeof dflt, "%s/plugstack.conf", dirname(dir));
    bool set = plugstack && plugstack[0] == '/';
    const char *path = set ? plugstack : dflt;
    char *params = config_value(config, "SlurmctldParameters");
    bool configless = params && strstr(params, "enable_configless");

    struct plug_line pl = {0};
    plugstack_scan(path, &pl, false, false, 0);
    if (!pl.args) {
        report("FAIL", "%s names no spank_batchai.so (required /usr/lib/slurm/spank_batchai.so ...: "
               "spank_batchai(8))", path);
        ok = false;
    } else {
        report("ok", "the plugin's line is in %s", pl.file);
        struct bai_diag diag = {0};
        char *save = NULL, *args = strdup(pl.args);
        for (char *w = args ? strtok_r(args, " \t", &save) : NULL; w; w = strtok_r(NULL, " \t", &save))
            (void)bai_settings_apply(site, w, pl.file, true, &diag);
        free(args);
        if (bai_diag_total(&diag)) {
            bai_diag_print(&diag, stdout, "FAIL plugstack arguments: ");
            problems += (int)bai_diag_total(&diag);
            ok = false;
        }
        bai_diag_free(&diag);
    }
    if (configless) {
        char pdir[PATH_MAX];
        snprintf(pdir, sizeof pdir, "%s", path);
        if (set && strcmp(path, dflt) != 0)
            report("warn", "configless: PlugStackConfig=%s is not beside slurm.conf, so it is not shipped; every "
                   "node must have it at that path (the node checks below say whether they do)", path);
        if (pl.include_has_dir)
            report("warn", "configless: the plugin's line comes from an include of a pattern with a directory "
                   "(%s), which configless does not ship; every node must have it (see the node checks)", pl.file);
    }
    free(conf);
    free(plugstack);
    free(params);
    free(pl.file);
    free(pl.args);
    return ok;
}

/* Process tracking and task confinement: with proctrack/linuxproc (or pgid) a process that leaves the task's
 * process tree (a daemonised helper, a double fork) escapes Slurm's signals and clean-up, which slurm.conf(5)
 * warns of and why it recommends proctrack/cgroup; without task/cgroup nothing holds a job to its memory or,
 * under ConstrainDevices, to its GPUs. Warnings: the plugin works either way. */
static void check_slurm_plugins(const char *config)
{
    char *proctrack = config_value(config, "ProctrackType");
    char *task = config_value(config, "TaskPlugin");
    if (proctrack && strcmp(proctrack, "proctrack/cgroup") == 0)
        report("ok", "ProctrackType=proctrack/cgroup (every process of a job is tracked and signalled)");
    else
        report("warn", "ProctrackType=%s: processes that leave a task's process tree escape Slurm's signals and "
               "clean-up; slurm.conf(5) recommends proctrack/cgroup", proctrack ? proctrack : "(none)");
    if (task && strstr(task, "task/cgroup"))
        report("ok", "TaskPlugin=%s has task/cgroup (jobs are held to their memory and devices)", task);
    else
        report("warn", "TaskPlugin=%s lacks task/cgroup: no job is held to its memory, nor under ConstrainDevices "
               "to its GPUs; set TaskPlugin=task/cgroup,task/affinity", task ? task : "(none)");
    free(proctrack);
    free(task);
}

/* The MPI plugin the site's `mpi` setting names for MPI jobs (srun --mpi=NAME) is one this Slurm has: srun
 * --mpi=list lists one per line, after a heading. */
static void check_mpi(const struct bai_settings *site)
{
    int st;
    bool found = false;
    char *argv[] = {"srun", "--mpi=list", NULL};
    char *out = run_capture(argv, &st);
    for (char *save = NULL, *l = out ? strtok_r(out, "\n", &save) : NULL; l && !found; l = strtok_r(NULL, "\n", &save)) {
        l += strspn(l, " \t");
        if (strncmp(l, "srun: ", 6) == 0) /* 22.05 writes "srun: pmix" */
            l += 6;
        found = strcmp(l, site->mpi) == 0;
    }
    if (found)
        report("ok", "srun --mpi=%s is available (the site's mpi setting, used by MPI jobs)", site->mpi);
    else
        report("FAIL", "srun --mpi=list does not list %s, the site's mpi setting: MPI jobs would fail at their "
               "main step; install Slurm's %s plugin (Debian: slurm-wlm's mpi plugins, built with PMIx) or set "
               "mpi= to one srun --mpi=list shows", site->mpi, site->mpi);
    free(out);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

/* The nodes of the partition (its default when NULL), one per line, from sinfo. */
static char *partition_nodes(const char *partition, int *count)
{
    int st;
    char *argv[] = {"sinfo", "-h", "-N", "-o", "%N %P", partition ? "-p" : NULL, (char *)partition, NULL};
    char *out = run_capture(argv, &st);
    if (!out || st != 0) {
        free(out);
        return NULL;
    }
    /* ",n1,n2," while collecting: sinfo -N lists a node once per partition it is in. */
    struct sbuf nodes = {0};
    sb_puts(&nodes, ",");
    *count = 0;
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *sp = strchr(l, ' '), look[300];
        if (!sp || (!partition && sp[strlen(sp) - 1] != '*')) /* no -p: the default partition, marked '*' */
            continue;
        *sp = '\0';
        snprintf(look, sizeof look, ",%s,", l);
        if (nodes.s && strstr(nodes.s, look))
            continue;
        sb_printf(&nodes, "%s,", l);
        (*count)++;
    }
    char *list = sb_finish(&nodes);
    free(out);
    if (list && *count) { /* without the outer commas */
        list[strlen(list) - 1] = '\0';
        memmove(list, list + 1, strlen(list));
    }
    return list;
}

/* The GPUs of `type` ("" for any) in a node's Gres= value as scontrol prints it: "gpu:2",
 * "gpu:a100:4(S:0-1)", "gpu:a100:2,gpu:v100:2", "(null)". */
static int node_gpus(const char *gres, const char *type)
{
    int total = 0;
    for (const char *p = gres; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        size_t len = strcspn(p, ",");
        if (strncmp(p, "gpu:", 4) != 0)
            continue;
        const char *f = p + 4, *colon = memchr(f, ':', len - 4);
        const char *num = colon ? colon + 1 : f;
        size_t tlen = colon ? (size_t)(colon - f) : 0;
        if (*type && (tlen != strlen(type) || strncmp(f, type, tlen) != 0))
            continue;
        total += atoi(num);
    }
    return total;
}

/* One partition's promise: every node has at least `want` GPUs of the site's type. `setting` names the
 * promise for messages. Returns whether it holds. */
static bool check_partition_gpus(const char *partition, const struct bai_gpus *want, const char *setting)
{
    int count = 0, bad = 0;
    char *nodes = partition_nodes(partition, &count);
    if (!nodes || !count) {
        report("FAIL", "%s: partition %s has no nodes (sinfo)", setting, partition);
        free(nodes);
        return false;
    }
    for (char *save = NULL, *n = strtok_r(nodes, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
        /* No shell, and the record read by its keys (slurm_read.h). */
        char *argv[] = {"scontrol", "-o", "show", "node", n, NULL}, *out = NULL, *err = NULL, *gres = NULL;
        struct bai_record *rec = malloc(sizeof *rec);
        if (rec && bai_run(argv, &out, &err) == 0 && out) {
            bai_record_parse(rec, out, bai_node_keys);
            const char *g = bai_record_get(rec, "Gres");
            gres = g[0] ? strdup(g) : NULL;
        }
        free(rec);
        free(err);
        int have = gres ? node_gpus(gres, want->type) : 0;
        if (have < want->count) {
            report("FAIL", "node %s of partition %s has %d GPU(s)%s%s (Gres=%s) but %s promises %d per node: give "
                   "it Gres=gpu:%s%s%d in slurm.conf and gres.conf, or change %s", n, partition, have,
                   want->type[0] ? " of type " : "", want->type, gres ? gres : "(none)", setting, want->count,
                   want->type, want->type[0] ? ":" : "", want->count, setting);
            bad++;
        }
        free(out);
        free(gres);
    }
    if (!bad)
        report("ok", "%s: every node of partition %s has %d GPU(s)%s%s", setting, partition, want->count,
               want->type[0] ? " of type " : "", want->type);
    free(nodes);
    return bad == 0;
}

/* Slurm puts no GPU into an OCI container by itself: oci.conf must run a runtime that adds them (the NVIDIA
 * container runtime or its hook, or CDI devices). Read on this host, beside its slurm.conf. */
static void check_oci_gpus(const char *config)
{
    char *conf = config_value(config, "SLURM_CONF"), path[PATH_MAX], dir[PATH_MAX], line[4096];
    bool gpu = false;
    snprintf(dir, sizeof dir, "%s", conf ? conf : "/etc/slurm/slurm.conf");
    snprintf(path, sizeof path, "%s/oci.conf", dirname(dir));
    FILE *f = fopen(path, "re");
    while (f && !gpu && fgets(line, sizeof line, f))
        gpu = line[0] != '#' && (strstr(line, "nvidia") || strstr(line, "cdi"));
    if (f)
        fclose(f);
    report(gpu ? "ok" : "warn", "container_runtime=oci: %s %s%s", path,
           gpu ? "names an NVIDIA runtime, hook or CDI device, so containers can get their GPUs"
               : "names no NVIDIA runtime, hook or CDI device: a job's container gets none of its GPUs "
                 "(spank_batchai(8), GPUs)", f ? "" : " (cannot read it)");
    free(conf);
}

/* The GPUs the site's settings promise (gpus.ID, gpus_per_node of a mapped cluster or of `partition`) against
 * Slurm: GresTypes has gpu, each node of those partitions has them, devices are confined to a job's own, and
 * the container runtime can pass them on. */
static void check_gpus(const char *config, const struct bai_settings *site)
{
    bool any = false;
    for (size_t i = 0; i <= site->n_clusters; i++) {
        const char *id = i < site->n_clusters ? site->clusters[i].key : NULL;
        const char *partition = id ? site->clusters[i].value : site->partition;
        const char *v = id ? bai_settings_cluster_gpus(site, id) : NULL;
        struct bai_gpus want = { .count = site->gpus_per_node };
        char setting[160];
        if (!partition || (v && bai_gpus_parse(v, &want) != 0) || want.count == 0)
            continue;
        if (!any) {
            char *types = config_value(config, "GresTypes");
            bool gpu = types && strstr(types, "gpu");
            report(gpu ? "ok" : "FAIL", "GresTypes=%s%s", types ? types : "(none)",
                   gpu ? " has gpu" : ": the site promises GPUs, so set GresTypes=gpu in slurm.conf");
            free(types);
            char *constrain = config_value(config, "ConstrainDevices");
            bool yes = constrain && strcasecmp(constrain, "yes") == 0;
            report(yes ? "ok" : "warn", "ConstrainDevices=%s%s", constrain ? constrain : "(unset)",
                   yes ? ": a task opens only the GPUs Slurm gave it" : ": any job can open every GPU of its node; set "
                   "ConstrainDevices=yes in cgroup.conf (with TaskPlugin=task/cgroup)");
            free(constrain);
            any = true;
        }
        if (id)
            snprintf(setting, sizeof setting, "%s%s", v ? "gpus." : "gpus_per_node for cluster.", id);
        else
            snprintf(setting, sizeof setting, "gpus_per_node for partition=%s", partition);
        check_partition_gpus(partition, &want, setting);
    }
    if (any && site->runtime == BAI_RUNTIME_OCI)
        check_oci_gpus(config);
}

/* How long the probe waits for its allocation, in seconds. */
enum { CHECK_SITE_ALLOC_WAIT = 60 };

/* The probe step on every node; its lines are check-node's, then srun's own messages. */
static void check_nodes(const char *self, const char *partition, const char *dir, const struct bai_settings *site)
{
    int count = 0, st;
    char *nodes = partition_nodes(partition, &count);
    if (!nodes || count == 0) {
        report("FAIL", "sinfo lists no node in partition %s", partition ? partition : "(the default)");
        free(nodes);
        return;
    }
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof probe, "%s/.batchai-check-site-XXXXXX", dir) >= (int)sizeof probe || !mkdtemp(probe)) {
        report("FAIL", "cannot make a probe directory in %s: %s", dir, strerror(errno));
        free(nodes);
        return;
    }
    char job[PATH_MAX + 32];
    (void)snprintf(job, sizeof job, "%s/check-site.json", probe);
    FILE *f = fopen(job, "we");
    if (f) {
        fprintf(f, "{\"properties\": {\"nodeCount\": %d, \"stdOutErrPathPrefix\": \"%s/logs\",\n"
                   "  \"customToolkitSettings\": {\"commandLine\": \"true\"}}}\n", count, probe);
        fclose(f);
    }
    /* --immediate: a partition whose nodes are drained, down or busy is reported by srun after that long,
     * instead of a check that waits for ever. */
    char immediate[32], nodecount[32], *jobopt = NULL;
    snprintf(immediate, sizeof immediate, "--immediate=%d", CHECK_SITE_ALLOC_WAIT);
    snprintf(nodecount, sizeof nodecount, "--nodes=%d", count);
    const char *runtime = site->runtime == BAI_RUNTIME_OCI ? "oci" : site->runtime == BAI_RUNTIME_PYXIS ? "pyxis" : "none";
    size_t k = 0, n_alloc = 24 + site->n_shares;
    char **argv = calloc(n_alloc, sizeof *argv), **pairs = calloc(site->n_shares + 1, sizeof *pairs);
    bool oom = !argv || !pairs || asprintf(&jobopt, "--batchai-job=%s", job) < 0;
    if (oom)
        jobopt = NULL;
    if (!oom) {
        const char *fixed[] = {"srun", "--job-name=batchai-check-site", "--time=5", immediate, nodecount,
                               "--ntasks-per-node=1"};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            argv[k++] = (char *)fixed[i];
        if (partition) {
            argv[k++] = "--partition";
            argv[k++] = (char *)partition;
        }
        const char *rest[] = {"--nodelist", nodes, jobopt, self, "check-node", site->job_root, site->job_temp,
                              runtime, site->image_root, site->mount_root, site->shares_root};
        for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++)
            argv[k++] = (char *)rest[i];
        for (size_t i = 0; i < site->n_shares && !oom; i++) {
            oom = asprintf(&pairs[i], "%s=%s", site->shares[i].key, site->shares[i].value) < 0;
            if (oom)
                pairs[i] = NULL;
            argv[k++] = pairs[i];
        }
    }
    char *out = oom ? NULL : run_capture(argv, &st);
    if (oom)
        report("FAIL", "out of memory running the probe step");
    for (size_t i = 0; pairs && i < site->n_shares; i++)
        free(pairs[i]);
    free(pairs);
    free(argv);
    free(jobopt);
    /* Each node that ran check-node says "<node> prepared"; a node without the line failed. */
    for (char *save = NULL, *n = strtok_r(nodes, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
        char want[300];
        snprintf(want, sizeof want, "node %s: ok   the plugin prepared it", n);
        if (!out || !strstr(out, want))
            report("FAIL", "node %s: the probe step did not report it prepared (the lines below say why)", n);
    }
    if (out)
        for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            if (strncmp(l, "node ", 5) == 0) {
                puts(l);
                problems += strstr(l, ": FAIL ") != NULL;
            } else {
                printf("     %s\n", l); /* srun's own messages, the plugin's among them */
            }
        }
    if (!out || st != 0)
        report("FAIL", "the probe step (srun --batchai-job on %d node%s) failed%s", count, count == 1 ? "" : "s",
               out ? "" : ": cannot run srun");
    free(out);
    free(nodes);
    if (nftw(probe, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        report("warn", "cannot remove the probe directory %s", probe);
}

int bai_check_site_main(const char *self, int argc, char **argv)
{
    static const char usage[] = "usage: batchai-job check-site [-p PARTITION] [-d DIR] (--help says more)\n";
    static const char help[] =
        "usage: batchai-job check-site [-p PARTITION] [-d DIR]\n"
        "Check, as the admin (root), that a partition can run Batch AI jobs. One line per check, \"ok\", \"warn\"\n"
        "or \"FAIL\" first; exit 0 when nothing failed, 1 otherwise, 2 on a usage error.\n"
        "  -p, --partition PARTITION  the partition to check (default: Slurm's default partition)\n"
        "  -d, --dir DIR              where the probe job file is written for the time of the check; every\n"
        "                             node must see it at the same path (default: the current directory)\n"
        "  -h, --help                 this text\n"
        "On this host: PrologFlags=Alloc, the plugstack line of spank_batchai.so and its settings (configless\n"
        "pitfalls too), ProctrackType and TaskPlugin (cgroup recommended), that srun --mpi=list has the site's\n"
        "mpi plugin, and GPU settings against the partition's GRES.\n"
        "On every node of the partition, inside one short real Batch AI job step (srun --batchai-job, at most\n"
        "60 s waiting for the nodes): the plugin prepared the node (and the Slurm it was built for), job_root\n"
        "root's alone from /, job_temp by the prolog's rule, node-local, made at boot by a tmpfiles.d line where\n"
        "users can write its parent, and any name a user took first that the plugin moved aside; mount_root,\n"
        "shares_root and every share.NAME directory as the node sees it (each within a few seconds); the\n"
        "container runtime and image_root.\n"
        "Manual: spank_batchai(8).\n";
    const char *partition = NULL;
    char cwd[PATH_MAX], dir[PATH_MAX] = "";
    int st;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(help, stdout);
            return 0;
        }
        bool p = strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--partition") == 0;
        bool d = strcmp(argv[i], "-d") == 0 || strcmp(argv[i], "--dir") == 0;
        if ((!p && !d) || i + 1 == argc) {
            fputs(usage, stderr);
            return 2;
        }
        if (p)
            partition = argv[++i];
        else if (!realpath(argv[++i], dir)) {
            fprintf(stderr, "batchai-job check-site: %s: %s\n", argv[i], strerror(errno));
            return 2;
        }
    }
    if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "batchai-job check-site: getcwd: %s\n", strerror(errno));
        return 2;
    }
    char *show_config[] = {"scontrol", "show", "config", NULL};
    char *config = run_capture(show_config, &st);
    if (!config || st != 0) {
        report("FAIL", "scontrol show config failed: %s", config ? config : "cannot run scontrol");
        free(config);
        return 1;
    }
    struct bai_settings site;
    if (bai_settings_init(&site) != 0) {
        free(config);
        return 1;
    }
    char *version = config_value(config, "SLURM_VERSION");
    report("ok", "Slurm %s; batchai-job %s", version ? version : "(unknown)", BAI_VERSION);
    free(version);
    if (check_config(config, &site)) {
        check_slurm_plugins(config);
        check_mpi(&site);
        check_gpus(config, &site);
        check_nodes(self, partition, dir[0] ? dir : cwd, &site);
    }
    free(config);
    bai_settings_free(&site);
    printf("%s\n", problems ? "check-site: problems found" : "check-site: all checks passed");
    return problems ? 1 : 0;
}

/* --- check-node: inside the probe step, on each node, as the admin who ran check-site --- */

/* One line "node N: LEVEL message"; level "ok", "warn" or "FAIL" (check-site counts the FAIL lines). */
static void node_line(const char *node, const char *level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void node_line(const char *node, const char *level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("node %s: %-4s %s\n", node, level, msg);
}

static const char *ok_fail(bool good) { return good ? "ok" : "FAIL"; }

/* File systems by statfs's f_type (<linux/magic.h>; the out-of-tree ones from their sources), and whether a
 * directory there is the node's own. Others are reported as unknown. */
static const struct fs_kind {
    unsigned long magic;
    const char *name;
    bool local;
} fs_kinds[] = {
    {EXT4_SUPER_MAGIC, "ext2/ext3/ext4", true},
    {XFS_SUPER_MAGIC, "xfs", true},
    {BTRFS_SUPER_MAGIC, "btrfs", true},
    {TMPFS_MAGIC, "tmpfs", true},
    {RAMFS_MAGIC, "ramfs", true},
    {OVERLAYFS_SUPER_MAGIC, "overlay", true},
    {F2FS_SUPER_MAGIC, "f2fs", true},
    {0x2fc12fc1, "zfs", true},
    {NFS_SUPER_MAGIC, "nfs", false},
    {SMB_SUPER_MAGIC, "smb", false},
    {CIFS_SUPER_MAGIC, "cifs", false},
    {SMB2_SUPER_MAGIC, "smb2", false},
    {CEPH_SUPER_MAGIC, "ceph", false},
    {V9FS_MAGIC, "9p", false},
    {AFS_SUPER_MAGIC, "afs", false},
    {OCFS2_SUPER_MAGIC, "ocfs2", false},
    {0x01161970, "gfs2", false},
    {0x0bd00bd0, "lustre", false},
    {0x47504653, "gpfs", false},
    {0x19830326, "beegfs", false},
    {FUSE_SUPER_MAGIC, "fuse", false}, /* blobfuse, glusterfs, s3fs...: in user space, and mostly remote */
};

/* Is job_temp (fd) on a file system of the node's own? A warning when not, or not known: it is scratch like
 * the BasePath of Slurm's job_container/tmpfs, and on a shared file system every job's temporary files share
 * that server's space and bandwidth, and outlive a node that dies. */
static void job_temp_locality(const char *node, const char *job_temp, int fd)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0) {
        node_line(node, "warn", "job_temp %s: statfs: %s", job_temp, strerror(errno));
        return;
    }
    const unsigned long magic = (unsigned long)sf.f_type;
    for (size_t i = 0; i < sizeof fs_kinds / sizeof fs_kinds[0]; i++)
        if (fs_kinds[i].magic == magic) {
            if (fs_kinds[i].local)
                node_line(node, "ok", "job_temp %s is on %s (statfs type 0x%lx), a node-local file system", job_temp,
                          fs_kinds[i].name, magic);
            else
                node_line(node, "warn", "job_temp %s is on %s (statfs type 0x%lx), not a node-local file "
                          "system: job_temp should be node-local scratch", job_temp, fs_kinds[i].name, magic);
            return;
        }
    node_line(node, "warn", "job_temp %s is on a file system of statfs type 0x%lx, not known to be node-local: "
              "job_temp should be node-local scratch", job_temp, magic);
}

/* Is `prog` an executable on PATH? */
static bool on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        if (snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog) < (int)sizeof buf && access(buf, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}

/* How long a directory on a node may take to answer check-node's stat: a share whose server is gone must
 * not hold the probe step until its time limit. */
enum { DIR_ANSWER_SECONDS = 10 };

/* Is `path` a directory, as this node sees it? 0, or -1 with why. The stat runs in a child that is given up
 * on after DIR_ANSWER_SECONDS (it may be stuck in the kernel for good; the step's end takes it). */
static int dir_answers(const char *path, char *why, size_t size)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct stat st;
        if (stat(path, &st) != 0)
            _exit(errno > 0 && errno < 255 ? errno : 254);
        _exit(S_ISDIR(st.st_mode) ? 0 : 255);
    }
    if (pid < 0) {
        snprintf(why, size, "cannot fork: %s", strerror(errno));
        return -1;
    }
    int status;
    for (int i = 0; i < DIR_ANSWER_SECONDS * 20; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : 254;
            if (code == 0)
                return 0;
            snprintf(why, size, "%s", code == 255 ? "is not a directory" : code == 254 ? "cannot be checked"
                                                                                      : strerror(code));
            return -1;
        }
        if (r < 0 && errno != EINTR)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
    }
    kill(pid, SIGKILL);
    snprintf(why, size, "did not answer within %d s (a file server gone?)", DIR_ANSWER_SECONDS);
    return -1;
}

/* mount_root, shares_root and each share.NAME=DIR as this node sees them: a job whose mount finds no
 * directory fails on the node with a message that does not say which setting is wrong. */
static bool check_node_dirs(const char *node, const char *mount_root, const char *shares_root, int n, char **shares)
{
    char why[256];
    bool all = true;
    if (dir_answers(mount_root, why, sizeof why) == 0)
        node_line(node, "ok", "mount_root %s (AZ_BATCHAI_MOUNT_ROOT) is a directory here", mount_root);
    else {
        node_line(node, "FAIL", "mount_root %s (AZ_BATCHAI_MOUNT_ROOT) %s on this node: jobs that use it fail "
                  "there (with a misleading Permission denied); make it, or set mount_root= to the directory of "
                  "the cluster's mounts", mount_root, why);
        all = false;
    }
    if (dir_answers(shares_root, why, sizeof why) == 0)
        node_line(node, "ok", "shares_root %s is a directory here", shares_root);
    else {
        node_line(node, "FAIL", "shares_root %s %s on this node: the jobs' shares without a share.NAME setting "
                  "are missing here", shares_root, why);
        all = false;
    }
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(shares[i], '=');
        if (!eq)
            continue;
        if (dir_answers(eq + 1, why, sizeof why) == 0)
            node_line(node, "ok", "share %.*s: %s is a directory here", (int)(eq - shares[i]), shares[i], eq + 1);
        else {
            node_line(node, "FAIL", "share %.*s: %s %s on this node: jobs that mount it fail there",
                      (int)(eq - shares[i]), shares[i], eq + 1, why);
            all = false;
        }
    }
    return all;
}

/* Where a user can write job_temp's parent (/tmp), the name must be root's from boot on: a tmpfiles.d line
 * "d <job_temp> MODE root root" (systemd reads these directories, the first one a file name is found in
 * wins). Absent: a warning (the plugin moves a user's entry aside, then makes it); a line that makes it
 * another user's or writable by others: a failure, the plugin would refuse what boot makes. */
static const char *const tmpfiles_dirs[] = {"/etc/tmpfiles.d", "/run/tmpfiles.d", "/usr/local/lib/tmpfiles.d",
                                            "/usr/lib/tmpfiles.d"};

static bool check_tmpfiles(const char *node, const char *job_temp)
{
    char parent[PATH_MAX];
    struct stat st;
    snprintf(parent, sizeof parent, "%s", job_temp);
    if (stat(dirname(parent), &st) != 0 || !(st.st_mode & (S_IWGRP | S_IWOTH)))
        return true; /* only root can make the name there */
    for (size_t d = 0; d < sizeof tmpfiles_dirs / sizeof tmpfiles_dirs[0]; d++) {
        char pattern[PATH_MAX];
        glob_t g;
        snprintf(pattern, sizeof pattern, "%s/*.conf", tmpfiles_dirs[d]);
        if (glob(pattern, 0, NULL, &g) != 0)
            continue;
        for (size_t i = 0; i < g.gl_pathc; i++) {
            FILE *f = fopen(g.gl_pathv[i], "re");
            char line[1024];
            while (f && fgets(line, sizeof line, f)) {
                char type[8], path[PATH_MAX], mode[16], user[64], group[64];
                if (sscanf(line, "%7s %4095s %15s %63s %63s", type, path, mode, user, group) != 5 ||
                    (strcmp(type, "d") != 0 && strcmp(type, "D") != 0) || strcmp(path, job_temp) != 0)
                    continue;
                line[strcspn(line, "\n")] = '\0';
                unsigned long m = strtoul(mode, NULL, 8);
                bool good = strcmp(user, "root") == 0 && !(m & 022);
                if (good)
                    node_line(node, "ok", "job_temp %s is made at boot, root's (%s: %s)", job_temp, g.gl_pathv[i], line);
                else
                    node_line(node, "FAIL", "%s: \"%s\" makes job_temp %s at boot %s: the plugin refuses it; make it "
                              "\"d %s 0755 root root -\"", g.gl_pathv[i], line, job_temp,
                              strcmp(user, "root") != 0 ? "another user's" : "writable by group or others", job_temp);
                fclose(f);
                globfree(&g);
                return good;
            }
            if (f)
                fclose(f);
        }
        globfree(&g);
    }
    node_line(node, "warn", "no tmpfiles.d line makes job_temp %s at boot, and users can write %s: install the "
              "package's (or make install's) slurm-batchai.conf in /usr/lib/tmpfiles.d, or write \"d %s 0755 root "
              "root -\" to /etc/tmpfiles.d/slurm-batchai.conf", job_temp, parent, job_temp);
    return true;
}

/* A name a user took first that slurmd's start or a prolog moved aside (bai_scratch_dir_reclaim) stays
 * there until an admin looks at it. */
static void check_taken(const char *node, const char *job_temp)
{
    char pattern[PATH_MAX + 32];
    glob_t g;
    snprintf(pattern, sizeof pattern, "%s.taken-by-uid-*", job_temp);
    if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
        return;
    for (size_t i = 0; i < g.gl_pathc; i++)
        node_line(node, "warn", "%s: a user took job_temp's name first, and the plugin moved their entry aside "
                  "(slurmd's log says when); look at it and remove it", g.gl_pathv[i]);
    globfree(&g);
}

int bai_check_node_main(int argc, char **argv)
{
    if (argc != 4 && argc < 6) {
        fprintf(stderr, "usage: batchai-job check-node JOB_ROOT JOB_TEMP RUNTIME IMAGE_ROOT [MOUNT_ROOT SHARES_ROOT "
                "[NAME=DIR...]] (run by check-site)\n");
        return 2;
    }
    const char *job_root = argv[0], *job_temp = argv[1], *runtime = argv[2], *image_root = argv[3];
    const char *node = getenv("SLURMD_NODENAME"), *jobid = getenv("SLURM_JOB_ID");
    const char *prepared = getenv(BAI_PREPARED_VAR), *built = getenv(BAI_PLUGIN_SLURM_VAR);
    char want[512], why[BAI_WHY_MAX];
    bool all = true;
    if (!node)
        node = "?";
    snprintf(want, sizeof want, "%s:%s", jobid ? jobid : "", node);
    if (prepared && strcmp(prepared, want) == 0)
        node_line(node, "ok", "the plugin prepared it (built for Slurm %s)", built ? built : "?");
    else {
        node_line(node, "FAIL", "the plugin did not run here: it is not in this node's plugstack (configless: an "
                  "include with a directory is not shipped, an absolute PlugStackConfig must exist on the node)");
        all = false;
    }
    /* The same rule the plugin applies as root: every component from / root's and writable by root alone. */
    int fd = bai_trusted_dir_open(job_root, false, why);
    if (fd >= 0) {
        node_line(node, "ok", "job_root %s is root's alone from /", job_root);
        close(fd);
    } else {
        node_line(node, "FAIL", "job_root: %s", why);
        all = false;
    }
    /* job_temp by the prolog's own rule and in its words (bai_scratch_dir_open, which also makes it when
     * missing, as the prolog does). This node's prolog has just passed it for the probe step; a node where it
     * did not shows the prolog's message among srun's lines instead. */
    fd = bai_scratch_dir_open(job_temp, why);
    if (fd >= 0) {
        node_line(node, "ok", "job_temp %s is root's and writable by root alone (its parents root's, or a root-owned "
                  "sticky directory such as /tmp)", job_temp);
        job_temp_locality(node, job_temp, fd);
        close(fd);
    } else {
        node_line(node, "FAIL", BAI_JOB_TEMP_REFUSED, job_temp, why);
        all = false;
    }
    all &= check_tmpfiles(node, job_temp);
    check_taken(node, job_temp);
    if (argc >= 6)
        all &= check_node_dirs(node, argv[4], argv[5], argc - 6, argv + 6);
    if (strcmp(runtime, "oci") == 0) {
        bool runc = on_path("runc"), crun = on_path("crun");
        node_line(node, ok_fail(runc || crun), "container runtime oci: %s",
                  runc ? "runc found" : crun ? "crun found" : "neither runc nor crun on PATH");
        all &= runc || crun;
        bool images = access(image_root, X_OK) == 0;
        node_line(node, ok_fail(images), "image_root %s %s", image_root, images ? "is there" : "is missing");
        all &= images;
    } else if (strcmp(runtime, "pyxis") == 0) {
        bool enroot = on_path("enroot");
        node_line(node, ok_fail(enroot), "container runtime pyxis: %s",
                  enroot ? "enroot found" : "enroot is not on PATH");
        all &= enroot;
    } else {
        node_line(node, "ok", "container runtime none: container jobs are refused at submission");
    }
    fflush(stdout);
    return all ? 0 : 1;
}
