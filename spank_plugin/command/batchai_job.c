/* batchai-job: validate, translate and submit Batch AI job files; follow their Slurm jobs.
 * It shares the job-file library with the SPANK plugin, so what it prints is what the plugin does. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_site.h"
#include "job_control.h"
#include "jobfile/batchai_jobfile.h"
#include "monitor.h"
#include "partition_fit.h"
#include "pipeline_cmd.h"
#include "sweep_cmd.h"
#include "plugstack.h"
#include "slurm_job.h"

#ifndef BAI_VERSION
#define BAI_VERSION "unknown"
#endif

static const char usage_text[] =
    "Usage: batchai-job [OPTIONS] COMMAND [ARGS]\n"
    "\n"
    "Run Azure Batch AI job files (job.json, schema 2018-05-01) and Azure ML command jobs (YAML) on Slurm.\n"
    "\n"
    "Commands:\n"
    "  validate FILE... [--cluster NAME]\n"
    "                          check job files; exit 0 when all are valid, else 1 with every fault\n"
    "  translate FILE [--cluster NAME]\n"
    "                          print the batch script `sbatch --batchai-job=FILE` submits\n"
    "  submit FILE [--cluster NAME] [--experiment NAME] [SBATCH_OPTION...]\n"
    "                          submit through the plugin: sbatch --batchai-job=FILE [--batchai-name=NAME]\n"
    "                          [--batchai-cluster=NAME]\n"
    "                          [SBATCH_OPTION...]; with --settings or --set, the file is first checked as\n"
    "                          validate does and refused when they change the script this site submits;\n"
    "                          --experiment records NAME in the job's Slurm comment (batchai-experiment=NAME);\n"
    "                          `submit FILE --wait --parsable` waits and prints only the job id\n"
    "                          an Azure ML pipeline: one job per step, after the steps it reads from;\n"
    "                          status, wait and terminate take its id (its first step's job id);\n"
    "                          an Azure ML sweep: one job array of its trials (status names the best)\n"
    "  list [--experiment NAME | PIPELINE_ID]\n"
    "                          your Batch AI and Azure ML jobs Slurm still holds, newest first\n"
    "  status JOBID [--json]   the job's Batch AI execution state (queued, running, terminating, succeeded,\n"
    "                          failed, cancelled), pending reason, exit code, errors; exit 1 when it failed\n"
    "  wait JOBID [--timeout SECONDS]\n"
    "                          until the job ended for good (a requeued job is waited for again); prints a\n"
    "                          final state line and exits with the job's exit status (124: timed out)\n"
    "  nodes JOBID [--json]    each node of the job: name, address, state, this attempt's preparation result\n"
    "  exec JOBID [--node NODE] -- COMMAND [ARG...]\n"
    "                          run COMMAND on a node of the running job, as you, with the job's AZ_BATCHAI_*\n"
    "                          environment and mounts (srun --overlap into the job)\n"
    "  terminate JOBID [--grace SECONDS]\n"
    "                          SIGTERM to the job's steps (a checkpointing step saves), then scancel after\n"
    "                          the grace (30 s) unless it ended\n"
    "  files JOBID             the job's log directory as a table: name, size, modified\n"
    "  stream JOBID [FILE]     follow a log file of the job (stdout.txt by default) until the job ends;\n"
    "                          exit 1 when it failed\n"
    "  check-site [-p PARTITION] [-d DIR]\n"
    "                          (admins) check Slurm's settings and every node of the partition with a probe\n"
    "                          step; exit 0 when all is well, else 1 (spank_batchai(8))\n"
    "\n"
    "Options:\n"
    "  -s, --settings FILE     site settings file (key=value lines, as the plugin's plugstack arguments),\n"
    "                          instead of this site's\n"
    "  -o, --set KEY=VALUE     one site setting on top of the others (this site's, or --settings FILE): it\n"
    "                          adds to them, or replaces that one key (repeatable)\n"
    "      --no-host           skip the checks of this host (share directories exist, images are staged),\n"
    "                          as a node does: for a file written for another cluster\n"
    "  -n, --name NAME         job name (default: the file name without .json or .job.json)\n"
    "      --cluster NAME      the job's cluster (its name or id), as az batchai job create --cluster: mapped\n"
    "                          by the site as the file's cluster.id is (cluster.NAME, gpus.NAME); a file\n"
    "                          that names another cluster is refused\n"
    "      --share NAME=DIR    share NAME is your directory DIR for this job (repeatable; sbatch's\n"
    "                          --batchai-share=NAME=DIR[,NAME=DIR]), where the site allows it (user_shares)\n"
    "  -h, --help              this text\n"
    "  -V, --version           the version\n"
    "\n"
    "Without --settings, the settings are the plugin's: the arguments of the spank_batchai.so line\n"
    "of the plugin stack that Slurm reads here (PlugStackConfig of $SLURM_CONF or " BAI_SLURM_CONF ",\n"
    "else plugstack.conf beside it, with its include lines), so validate and translate answer as sbatch.\n"
    "Settings keys and defaults: spank_batchai(8); the commands in full: batchai-job(1).\n"
    "Exit status: 0 success, 1 invalid job or failed command, 2 usage error.\n";

struct cli {
    struct bai_settings site;
    const char *name;
    enum bai_job_level level;
    bool own_settings; /* --settings or --set: site is not (only) this site's plugin line */
    char *shares;      /* --share words as "NAME=DIR,NAME=DIR", or NULL */
    const char *cluster; /* --cluster NAME, or NULL */
};

/* `--cluster NAME` or `--cluster=NAME` among a command's arguments, as az batchai job create takes it after
 * the command, into cli->cluster and out of argv (after a submit's FILE it would otherwise reach sbatch, which
 * reads --cluster as its own --clusters). Returns the arguments left, or -1 after a usage message. */
static int take_cluster(struct cli *cli, const char *cmd, int argc, char **argv)
{
    int k = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--cluster") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "batchai-job %s: --cluster wants the cluster's name\n", cmd);
                return -1;
            }
            cli->cluster = argv[++i];
        } else if (strncmp(argv[i], "--cluster=", 10) == 0) {
            cli->cluster = argv[i] + 10;
            if (!cli->cluster[0]) {
                fprintf(stderr, "batchai-job %s: --cluster wants the cluster's name\n", cmd);
                return -1;
            }
        } else
            argv[k++] = argv[i];
    }
    return k;
}

/* Open the file as sbatch's plugin does, only reading it directly; faults go to stderr prefixed with the path
 * as the user typed it. */
static int open_job(const struct cli *cli, const char *path, struct bai_opened *o)
{
    struct bai_diag diag = { 0 };
    char prefix[4200];
    /* Absolute, as the plugin has it: an Azure ML job's code, data and logs are found from its file. */
    char cwd[4096], *abs = NULL;
    if (path[0] != '/' && getcwd(cwd, sizeof cwd) && asprintf(&abs, "%s/%s", cwd, path) < 0)
        abs = NULL;
    struct bai_job_source src = { .path = path, .job_file = abs ? abs : path, .job_name = cli->name,
                                  .user_shares = cli->shares, .cluster = cli->cluster };
    int rc = bai_job_open(&src, &cli->site, cli->level, &bai_job_read_direct, o, &diag);

    snprintf(prefix, sizeof prefix, "%s: ", path);
    bai_diag_print(&diag, stderr, prefix);
    bai_diag_free(&diag);
    free(abs);
    return rc;
}

/* At HOST level, the job against its partition, as slurmctld will judge it (partition_fit.h); faults printed
 * with the path as the user typed it. Returns 0 when it fits (or Slurm cannot be asked). */
static int fit_partition(const struct cli *cli, const char *path, const struct bai_opened *o)
{
    struct bai_diag diag = { 0 };
    char prefix[4200];
    if (cli->level != BAI_JOB_HOST)
        return 0;
    bai_partition_fit(&o->plan, &diag);
    snprintf(prefix, sizeof prefix, "%s: ", path);
    bai_diag_print(&diag, stderr, prefix);
    int rc = bai_diag_total(&diag) ? 1 : 0;
    bai_diag_free(&diag);
    return rc;
}

/* --cluster names one job's cluster; a pipeline's or a sweep's jobs take theirs from their compute. */
static bool cluster_refused(const struct cli *cli, const char *path)
{
    if (cli->cluster)
        fprintf(stderr, "batchai-job: %s: --cluster is for a Batch AI or Azure ML job file: a pipeline's or a "
                        "sweep's jobs run on their own compute\n", path);
    return cli->cluster != NULL;
}

static struct bai_pipeline_opts pipeline_opts(const struct cli *cli)
{
    struct bai_pipeline_opts o = { .site = &cli->site, .level = cli->level, .name = cli->name,
                                   .shares = cli->shares };
    return o;
}

static int cmd_validate(const struct cli *cli, int argc, char **argv)
{
    int bad = 0;

    if (argc < 1) {
        fprintf(stderr, "batchai-job validate: expected at least one FILE\n");
        return 2;
    }
    for (int i = 0; i < argc; i++) {
        struct bai_opened o;
        if ((bai_pipeline_file(argv[i]) || bai_sweep_file(argv[i])) && cluster_refused(cli, argv[i])) {
            bad++;
            continue;
        }
        if (bai_pipeline_file(argv[i])) {
            struct bai_pipeline_opts po = pipeline_opts(cli);
            bad += bai_pipeline_validate(&po, argv[i]) != 0;
            continue;
        }
        if (bai_sweep_file(argv[i])) {
            struct bai_pipeline_opts po = pipeline_opts(cli);
            bad += bai_sweep_validate(&po, argv[i]) != 0;
            continue;
        }
        if (open_job(cli, argv[i], &o) != 0) {
            bad++;
            continue;
        }
        if (fit_partition(cli, argv[i], &o) != 0) {
            bad++;
            bai_opened_free(&o);
            continue;
        }
        printf("%s: valid (%s, %d node%s)\n", argv[i],
               o.job.aml ? "Azure ML command job" : bai_toolkit_name(o.job.toolkit.kind), o.job.node_count,
               o.job.node_count == 1 ? "" : "s");
        bai_opened_free(&o);
    }
    return bad ? 1 : 0;
}

static int cmd_translate(const struct cli *cli, int argc, char **argv)
{
    struct bai_opened o;
    int rc = 1;

    if (argc != 1) {
        fprintf(stderr, "batchai-job translate: expected exactly one FILE\n");
        return 2;
    }
    if ((bai_pipeline_file(argv[0]) || bai_sweep_file(argv[0])) && cluster_refused(cli, argv[0]))
        return 2;
    if (bai_pipeline_file(argv[0])) {
        struct bai_pipeline_opts po = pipeline_opts(cli);
        return bai_pipeline_translate(&po, argv[0]);
    }
    if (bai_sweep_file(argv[0])) {
        struct bai_pipeline_opts po = pipeline_opts(cli);
        return bai_sweep_translate(&po, argv[0]);
    }
    if (open_job(cli, argv[0], &o) != 0)
        return 1;
    char *script = bai_render_script(&o.plan);
    if (!script) {
        fprintf(stderr, "batchai-job: out of memory\n");
    } else {
        fputs(script, stdout);
        rc = fflush(stdout) == 0 ? 0 : 1;
        free(script);
    }
    bai_opened_free(&o);
    return rc;
}

/* The script of `path` under `cli`'s settings, faults printed; NULL when it is refused (or out of memory). */
static char *script_of(const struct cli *cli, const char *path)
{
    struct bai_opened o;
    if (open_job(cli, path, &o) != 0)
        return NULL;
    char *script = bai_render_script(&o.plan);
    if (!script)
        fprintf(stderr, "batchai-job: out of memory\n");
    bai_opened_free(&o);
    return script;
}

/* With --settings or --set: the file as validate and translate judge it, and those settings must not change
 * what this site's plugin, which sbatch runs, submits. Returns 0 when sbatch may go ahead, else the status. */
static int submit_check(const struct cli *cli, const char *path)
{
    struct cli here = {.name = cli->name, .level = cli->level, .shares = cli->shares, .cluster = cli->cluster};
    struct bai_diag diag = {0};
    char origin[PATH_MAX + 200] = "";
    int rc = 1;
    char *given = script_of(cli, path), *site = NULL;
    if (!given)
        return 1;
    if (bai_settings_init(&here.site) != 0) {
        fprintf(stderr, "batchai-job: out of memory\n");
        free(given);
        return 1;
    }
    if (bai_site_from_slurm(&here.site, origin, sizeof origin, &diag) != 0) {
        bai_diag_print(&diag, stderr, "batchai-job: settings: ");
        fprintf(stderr, "batchai-job submit: this site's settings (%s) have errors; nothing was submitted\n", origin);
    } else if (!(site = script_of(&here, path)))
        fprintf(stderr, "batchai-job submit: %s is valid under the settings given, but not under this site's (%s), "
                "which sbatch uses: the faults above; nothing was submitted\n", path, origin);
    else if (strcmp(given, site) != 0)
        fprintf(stderr, "batchai-job submit: --settings/--set change the script of %s from what this site's plugin "
                "submits (%s), and sbatch uses the site's: `translate` without them shows it; drop them, or ask "
                "the admins for the setting; nothing was submitted\n", path, origin);
    else
        rc = 0;
    free(given);
    free(site);
    bai_diag_free(&diag);
    bai_settings_free(&here.site);
    return rc;
}

/* Submission goes through sbatch and the plugin, so a job submitted here is the same as one submitted by
 * hand; this command spells the options, and checks first what --settings and --set would change. */
static int cmd_submit(const struct cli *cli, int argc, char **argv)
{
    char **args;
    char *opt, *name = NULL, *shares = NULL, *cluster = NULL;

    if (argc < 1) {
        fprintf(stderr, "batchai-job submit: expected FILE\n");
        return 2;
    }
    if ((bai_pipeline_file(argv[0]) || bai_sweep_file(argv[0])) && cluster_refused(cli, argv[0]))
        return 2;
    if (bai_pipeline_file(argv[0])) {
        /* A pipeline is submitted here, step by step: under --settings/--set its steps are checked with
         * them, and sbatch's plugin checks each again with the site's. */
        struct bai_pipeline_opts po = pipeline_opts(cli);
        return bai_pipeline_submit(&po, argv[0], argc - 1, argv + 1);
    }
    if (bai_sweep_file(argv[0])) {
        struct bai_pipeline_opts po = pipeline_opts(cli);
        return bai_sweep_submit(&po, argv[0], argc - 1, argv + 1);
    }
    if (cli->own_settings) {
        int rc = submit_check(cli, argv[0]);
        if (rc != 0)
            return rc;
    }
    /* The file's size against its partition, unless options typed here change the size or the partition (they
     * win over the file's). A file that does not open is left to sbatch, which says why. */
    bool sized_here = false;
    for (int i = 1; i < argc; i++)
        sized_here |= strncmp(argv[i], "-N", 2) == 0 || strncmp(argv[i], "--nodes", 7) == 0 ||
                      strncmp(argv[i], "-n", 2) == 0 || strncmp(argv[i], "--ntasks", 8) == 0 ||
                      strncmp(argv[i], "-p", 2) == 0 || strncmp(argv[i], "--partition", 11) == 0;
    struct bai_opened o;
    struct bai_diag quiet = { 0 };
    char cwd[4096], *abs = NULL;
    if (argv[0][0] != '/' && getcwd(cwd, sizeof cwd) && asprintf(&abs, "%s/%s", cwd, argv[0]) < 0)
        abs = NULL;
    struct bai_job_source src = { .path = argv[0], .job_file = abs ? abs : argv[0], .job_name = cli->name,
                                  .user_shares = cli->shares, .cluster = cli->cluster };
    if (!sized_here && cli->level == BAI_JOB_HOST &&
        bai_job_open(&src, &cli->site, BAI_JOB_POLICY, &bai_job_read_direct, &o, &quiet) == 0) {
        int rc = fit_partition(cli, argv[0], &o);
        bai_opened_free(&o);
        if (rc != 0) {
            fprintf(stderr, "batchai-job submit: %s does not fit its partition; nothing was submitted\n", argv[0]);
            bai_diag_free(&quiet);
            free(abs);
            return 1;
        }
    }
    bai_diag_free(&quiet);
    free(abs);
    args = calloc((size_t)argc + 5, sizeof *args);
    if (!args || asprintf(&opt, "--batchai-job=%s", argv[0]) < 0 ||
        (cli->name && asprintf(&name, "--batchai-name=%s", cli->name) < 0) ||
        (cli->cluster && asprintf(&cluster, "--batchai-cluster=%s", cli->cluster) < 0) ||
        (cli->shares && asprintf(&shares, "--batchai-share=%s", cli->shares) < 0)) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return 1;
    }
    int k = 0;
    args[k++] = "sbatch";
    args[k++] = opt;
    if (name)
        args[k++] = name;
    if (shares)
        args[k++] = shares;
    if (cluster)
        args[k++] = cluster;
    for (int i = 1; i < argc; i++) {
        /* The experiment goes into the job's comment, where list and status read it. */
        if (strcmp(argv[i], "--experiment") == 0 && i + 1 < argc) {
            const char *exp = argv[++i];
            if (!exp[0] || strpbrk(exp, " \t\n")) {
                fprintf(stderr, "batchai-job submit: --experiment wants a name without spaces, not '%s'\n", exp);
                return 2;
            }
            char *comment;
            if (asprintf(&comment, "--comment=" BAI_EXPERIMENT_TAG "%s", exp) < 0) {
                fprintf(stderr, "batchai-job: out of memory\n");
                return 1;
            }
            args[k++] = comment;
        } else
            args[k++] = argv[i];
    }
    execvp("sbatch", args);
    fprintf(stderr, "batchai-job: cannot run sbatch: %s\n", strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "settings", required_argument, NULL, 's' }, { "set", required_argument, NULL, 'o' },
        { "name", required_argument, NULL, 'n' },     { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },        { "no-host", no_argument, NULL, 'H' },
        { "share", required_argument, NULL, 'S' },   { "cluster", required_argument, NULL, 'c' },
        { NULL, 0, NULL, 0 },
    };
    struct cli cli = { .name = NULL, .level = BAI_JOB_HOST };
    char origin[PATH_MAX + 200] = "";
    bool help = false;
    struct bai_diag diag = { 0 };
    const char *settings_file = NULL, *sets[64];
    size_t n_sets = 0;
    int c, rc = 2;

    if (bai_settings_init(&cli.site) != 0) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return 1;
    }
    /* '+': options stop at the command, so `submit FILE --partition=x` passes sbatch options through. */
    while ((c = getopt_long(argc, argv, "+s:o:n:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 's': settings_file = optarg; break;
        case 'o':
            if (n_sets == sizeof sets / sizeof sets[0]) {
                fprintf(stderr, "batchai-job: too many --set options\n");
                goto out;
            }
            sets[n_sets++] = optarg;
            break;
        case 'n': cli.name = optarg; break;
        case 'c': cli.cluster = optarg; break;
        case 'S': {
            char *grown = NULL;
            if (asprintf(&grown, "%s%s%s", cli.shares ? cli.shares : "", cli.shares ? "," : "", optarg) < 0) {
                fprintf(stderr, "batchai-job: out of memory\n");
                goto out;
            }
            free(cli.shares);
            cli.shares = grown;
            break;
        }
        case 'H': cli.level = BAI_JOB_POLICY; break;
        case 'h': help = true; break;
        case 'V': printf("batchai-job %s\n", BAI_VERSION); rc = 0; goto out;
        default: fputs(usage_text, stderr); goto out;
        }
    }
    /* --settings FILE stands for another site; --set changes one key of whichever site, as the man page's
     * example reads. */
    if (settings_file) {
        snprintf(origin, sizeof origin, "%s and the defaults", settings_file);
        if (bai_settings_load_file(&cli.site, settings_file, &diag) != 0)
            goto settings_error;
    } else
        (void)bai_site_from_slurm(&cli.site, origin, sizeof origin, &diag);
    if (n_sets && !bai_diag_total(&diag)) {
        size_t len = strlen(origin);
        snprintf(origin + len, sizeof origin - len, ", with --set on top");
    }
    for (size_t i = 0; i < n_sets; i++)
        bai_settings_override(&cli.site, sets[i], "--set", &diag);
    cli.own_settings = settings_file || n_sets;
    if (help) {
        printf("%s\nSettings here: %s.\n", usage_text, origin);
        rc = 0;
        goto out;
    }
    if (bai_diag_total(&diag))
        goto settings_error;
    if (optind >= argc) {
        fputs(usage_text, stderr);
        goto out;
    }
    const char *cmd = argv[optind++];
    int n = argc - optind;
    char **rest = argv + optind;
    if (strcmp(cmd, "validate") == 0 || strcmp(cmd, "translate") == 0 || strcmp(cmd, "submit") == 0) {
        if ((n = take_cluster(&cli, cmd, n, rest)) < 0)
            goto out;
    }
    if (strcmp(cmd, "validate") == 0)
        rc = cmd_validate(&cli, n, rest);
    else if (strcmp(cmd, "translate") == 0)
        rc = cmd_translate(&cli, n, rest);
    else if (strcmp(cmd, "submit") == 0)
        rc = cmd_submit(&cli, n, rest);
    else if (strcmp(cmd, "check-site") == 0) {
        /* The probe step runs this very program on every node. */
        char self[PATH_MAX];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        self[len > 0 ? len : 0] = '\0';
        rc = bai_check_site_main(len > 0 ? self : argv[0], n, rest);
    } else if (strcmp(cmd, "check-node") == 0)
        rc = bai_check_node_main(n, rest);
    else if (strcmp(cmd, "sweep-best") == 0)
        rc = bai_pipeline_sweep_best(n, rest); /* what a pipeline's sweep step runs after its trials */
    else if ((strcmp(cmd, "status") == 0 || strcmp(cmd, "wait") == 0 || strcmp(cmd, "terminate") == 0 ||
              strcmp(cmd, "list") == 0) &&
             ((rc = bai_pipeline_control(cmd, n, rest)) >= 0 || (rc = bai_sweep_control(cmd, n, rest)) >= 0))
        ; /* the id of a pipeline or a sweep: all its jobs */
    else if ((strcmp(cmd, "nodes") == 0 || strcmp(cmd, "files") == 0 || strcmp(cmd, "stream") == 0 ||
              strcmp(cmd, "exec") == 0) &&
             ((rc = bai_pipeline_control(cmd, n, rest)) >= 0 || (rc = bai_sweep_control(cmd, n, rest)) >= 0))
        ; /* a sweep's id, or a pipeline's that is a sweep's: one trial is meant */
    else if (strcmp(cmd, "status") == 0 || strcmp(cmd, "files") == 0 || strcmp(cmd, "stream") == 0 ||
             strcmp(cmd, "wait") == 0 || strcmp(cmd, "nodes") == 0)
        rc = bai_monitor_main(cmd, n, rest);
    else if (strcmp(cmd, "list") == 0 || strcmp(cmd, "terminate") == 0 || strcmp(cmd, "exec") == 0)
        rc = bai_job_control_main(cmd, n, rest);
    else {
        fprintf(stderr, "batchai-job: unknown command \"%s\" (validate, translate, submit, list, status, wait, nodes, "
                        "exec, terminate, files, stream, check-site)\n",
                cmd);
        rc = 2;
    }
    goto out;
settings_error:
    bai_diag_print(&diag, stderr, "batchai-job: settings: ");
    fprintf(stderr, "batchai-job: settings from %s\n", origin);
    rc = 2;
out:
    bai_diag_free(&diag);
    bai_settings_free(&cli.site);
    free(cli.shares);
    return rc;
}
