/* batchai-job list/terminate/exec: the tutorial's `az batchai job list`, `job terminate` and
 * `job node exec`, through Slurm's own commands, so Slurm's permission checks are the ones that apply. */
#include "job_control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "slurm_job.h"
#include "slurm_read.h"
#include "jobfile/batchai_jobfile.h"

static int cmd_list(int argc, char **argv)
{
    const char *experiment = NULL;
    if (argc == 2 && strcmp(argv[0], "--experiment") == 0)
        experiment = argv[1];
    else if (argc != 0) {
        fprintf(stderr, "usage: batchai-job list [--experiment NAME]\n");
        return 2;
    }
    struct bai_jobinfo *jobs;
    size_t n;
    char why[1024];
    if (bai_job_list_user((unsigned)getuid(), &jobs, &n, why, sizeof why) != 0) {
        fprintf(stderr, "batchai-job: %s\n", why);
        return 1;
    }
    printf("%-10s %-12s %-8s %-20s %s\n", "JobId", "State", "Exit", "Experiment", "Name");
    for (size_t i = 0; i < n; i++) {
        char exp[256];
        if (!bai_job_is_batchai(&jobs[i]))
            continue;
        bai_job_experiment(&jobs[i], exp, sizeof exp);
        if (experiment && strcmp(exp, experiment) != 0)
            continue;
        printf("%-10s %-12s %-8s %-20s %s\n", jobs[i].id, bai_job_execution_state(&jobs[i]),
               bai_job_ended(&jobs[i]) ? jobs[i].exit_code : "-", exp[0] ? exp : "-", jobs[i].name);
    }
    free(jobs);
    return 0;
}

static int need_batchai(const char *id, struct bai_jobinfo *ji)
{
    char why[1024];
    if (bai_job_load(id, ji, why, sizeof why) != 0) {
        fprintf(stderr, "batchai-job: %s\n", why);
        return 1;
    }
    if (!bai_job_is_batchai(ji)) {
        fprintf(stderr, "batchai-job: job %s is not a Batch AI or Azure ML job (it was not submitted with "
                        "--batchai-job)\n", id);
        return 1;
    }
    return 0;
}

/* Run argv and pass on its messages; its exit status. */
static int run_loud(char *const argv[])
{
    char *out, *err;
    int st = bai_run(argv, &out, &err);
    if (out && out[0])
        fputs(out, stdout);
    if (st != 0)
        fprintf(stderr, "batchai-job: %s: %s\n", argv[0], err && err[0] ? err : "failed");
    free(out);
    free(err);
    return st;
}

/* Mark the job as terminated in its comment (slurm_job.h), keeping what the comment held (the experiment):
 * status and wait then say "terminated" however its steps end. */
static int mark_terminated(const struct bai_jobinfo *ji)
{
    char when[32], comment[1100], *opt = NULL, *id = NULL;
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    int n = snprintf(comment, sizeof comment, "%s%s" BAI_TERMINATED_TAG "%s", ji->comment, ji->comment[0] ? " " : "",
                     when);
    if (n < 0 || n > 1024) { /* slurmctld's limit */
        fprintf(stderr, "batchai-job: job %s's comment is too long to add the terminate mark to\n", ji->id);
        return 1;
    }
    if (asprintf(&opt, "Comment=%s", comment) < 0 || asprintf(&id, "JobId=%s", ji->id) < 0) {
        fprintf(stderr, "batchai-job: out of memory\n");
        free(opt);
        return 1;
    }
    char *update[] = {"scontrol", "update", id, opt, NULL};
    int st = run_loud(update);
    free(opt);
    free(id);
    return st != 0;
}

/* Stop, then cancel: SIGTERM to the job's steps only (scancel without --full; the batch shell and the srun in
 * it are spared, so srun does not kill its tasks and the script goes on to end the job with the main step's
 * own status), so that a main step that checkpoints on SIGTERM saves (cifar-train ends 3, resumable) and a
 * program's own TERM trap runs; after the grace, scancel, which Slurm ends with SIGKILL after its KillWait. */
static int cmd_terminate(int argc, char **argv)
{
    long grace = 30;
    if (argc == 3 && strcmp(argv[1], "--grace") == 0) {
        char *end;
        grace = strtol(argv[2], &end, 10);
        if (*end || grace < 0 || grace > 86400) {
            fprintf(stderr, "batchai-job terminate: --grace wants seconds (0 to 86400), not '%s'\n", argv[2]);
            return 2;
        }
        argc = 1;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: batchai-job terminate JOBID [--grace SECONDS]\n");
        return 2;
    }
    struct bai_jobinfo ji;
    char why[1024];
    if (need_batchai(argv[0], &ji))
        return 1;
    if (bai_job_ended(&ji)) {
        printf("job %s: already %s\n", ji.id, bai_job_execution_state(&ji));
        return 0;
    }
    if (strcmp(bai_job_execution_state(&ji), "queued") == 0) {
        char *cancel[] = {"scancel", ji.id, NULL};
        if (run_loud(cancel) != 0)
            return 1;
        printf("job %s: cancelled while queued\n", ji.id);
        return 0;
    }
    char when[64];
    if (!bai_job_terminated_at(&ji, when, sizeof when)[0] && mark_terminated(&ji) != 0)
        return 1;
    char *sig[] = {"scancel", "--signal=TERM", ji.id, NULL};
    if (run_loud(sig) != 0)
        return 1;
    printf("job %s: SIGTERM sent to its steps; waiting up to %ld s for them to stop\n", ji.id, grace);
    fflush(stdout);
    long waited = 0;
    for (; waited < grace * 2; waited++) {
        usleep(500 * 1000);
        if (bai_job_load(ji.id, &ji, why, sizeof why) != 0 || bai_job_ended(&ji))
            break;
    }
    if (!bai_job_ended(&ji)) {
        char *cancel[] = {"scancel", ji.id, NULL};
        if (run_loud(cancel) != 0)
            return 1;
        printf("job %s: terminated: still running after the %ld s grace, cancelled\n", ji.id, grace);
    } else
        printf("job %s: terminated: it stopped within %ld s (Slurm state %s, exit code %s)\n", ji.id,
               (waited + 2) / 2, ji.state, ji.exit_code);
    return 0;
}

/* What the plugin set on a node of the job, read from a first step there, without a container: the node it
 * ran on, the job's variables (BAI_JOB_VARS_VAR names them) and the container option (BAI_CONTAINER_VAR).
 * The values stay in `env` (NUL-separated NAME=VALUE entries, len bytes). */
struct node_context {
    char *env;
    size_t len;
    const char *node, *vars, *container;
};

static const char *env_entry(const struct node_context *c, const char *name)
{
    size_t n = strlen(name);
    for (const char *e = c->env; e < c->env + c->len; e += strlen(e) + 1)
        if (strncmp(e, name, n) == 0 && e[n] == '=')
            return e + n + 1;
    return NULL;
}

/* Slurm's refusal (another user's job, a job that ended) reaches the caller's standard error as srun wrote
 * it; the probe's status is returned. */
static int probe_node(const char *jobopt, const char *nodeopt, struct node_context *c)
{
    char *argv[] = {"srun", (char *)jobopt, "--overlap", "--nodes=1", "--ntasks=1", "--export=ALL",
                    (char *)nodeopt, "--", "/usr/bin/env", "-0", NULL};
    if (!nodeopt[strlen("--nodelist=")])
        argv[6] = "--quiet"; /* no node named: the probe's node is the one exec uses */
    memset(c, 0, sizeof *c);
    int st = bai_run_bytes(argv, &c->env, &c->len);
    if (st != 0)
        return st < 0 ? 1 : st;
    c->node = env_entry(c, "SLURMD_NODENAME");
    c->vars = env_entry(c, BAI_JOB_VARS_VAR);
    c->container = env_entry(c, BAI_CONTAINER_VAR);
    if (!c->node || !c->vars) {
        fprintf(stderr, "batchai-job: job %s is not a Batch AI or Azure ML job (it was not submitted with "
                        "--batchai-job), or spank_batchai.so is not loaded on %s (batchai-job check-site)\n",
                jobopt + strlen("--jobid="), c->node ? c->node : "its node");
        return 1;
    }
    return 0;
}

/* The job's variables of c into this process's environment, which srun passes on to the step: a container's
 * environment is written before the plugin's task context runs on Slurm 22.05 (batchai_jobfile.h). */
static int export_job_vars(const struct node_context *c)
{
    char *names = strdup(c->vars), *save = NULL;
    if (!names)
        return -1;
    for (char *name = strtok_r(names, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
        const char *v = env_entry(c, name);
        if (v && setenv(name, v, 1) != 0) {
            free(names);
            return -1;
        }
    }
    free(names);
    return 0;
}

/* NODE's index among the job's nodes (as SLURM_NODEID in the job's steps), -1 when not found. */
static int node_index(const char *node_list, const char *node)
{
    char *argv[] = {"scontrol", "show", "hostnames", (char *)node_list, NULL};
    char *out = NULL, *err = NULL;
    int found = -1, i = 0;
    if (bai_run(argv, &out, &err) == 0 && out)
        for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save), i++)
            if (strcmp(l, node) == 0) {
                found = i;
                break;
            }
    free(out);
    free(err);
    return found;
}

/* srun --overlap into the job's allocation, without the plugin's option: the plugin's remote side gives any
 * step of a Batch AI job its context (the AZ_BATCHAI_* environment and mounts) from what the prolog left on
 * the node (the job file's copy it verified, and the path that names the job), so the job file itself may
 * have been edited or deleted since submission. A first step on the node asks the plugin for the job's
 * variables and container; a job with a container (--container=BUNDLE or --container-image=IMAGE, the one its
 * steps and preparation ran in, for a job with its own script too) gets the command run in it, on the same
 * node, with those variables passed by srun. Slurm refuses another user's job itself. */
static int cmd_exec(int argc, char **argv)
{
    const char *node = NULL;
    int i = 1;
    if (argc >= 3 && strcmp(argv[1], "--node") == 0) {
        node = argv[2];
        i = 3;
    }
    if (argc < 1 || i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) {
        fprintf(stderr, "usage: batchai-job exec JOBID [--node NODE] -- COMMAND [ARG...]\n");
        return 2;
    }
    struct bai_jobinfo ji;
    char why[1024];
    if (bai_job_load(argv[0], &ji, why, sizeof why) != 0) {
        fprintf(stderr, "batchai-job: %s\n", why);
        return 1;
    }
    /* Another user's job: Slurm answers for itself below. */
    char mine[32];
    snprintf(mine, sizeof mine, "(%u)", (unsigned)getuid());
    size_t ul = strlen(ji.user_id);
    bool own = ul >= strlen(mine) && strcmp(ji.user_id + ul - strlen(mine), mine) == 0;
    /* Whether it is a Batch AI job (with its own script too, whose logs are where the script says) the plugin
     * on the node tells (probe_node). */
    if (own && strcmp(bai_job_execution_state(&ji), "running") != 0) {
        fprintf(stderr, "batchai-job: job %s: %s; exec needs a running job\n", ji.id, bai_job_execution_state(&ji));
        return 1;
    }
    char *jobopt = NULL, *nodeopt = NULL;
    if (asprintf(&jobopt, "--jobid=%s", ji.id) < 0 || asprintf(&nodeopt, "--nodelist=%s", node ? node : "") < 0) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return 1;
    }
    struct node_context c;
    int st = probe_node(jobopt, nodeopt, &c);
    if (st != 0)
        return st;
    free(nodeopt);
    if (asprintf(&nodeopt, "--nodelist=%s", c.node) < 0 || export_job_vars(&c) != 0) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return 1;
    }
    int n = argc - i - 1, k = 0;
    char **args = calloc((size_t)n + 14, sizeof *args);
    if (!args) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return 1;
    }
    args[k++] = "srun";
    args[k++] = jobopt;
    args[k++] = "--overlap";
    args[k++] = "--nodes=1";
    args[k++] = "--ntasks=1";
    args[k++] = "--export=ALL";
    args[k++] = nodeopt;
    if (c.container)
        args[k++] = (char *)c.container;
    args[k++] = "--";
    /* The plugin gives the one task of this step index 0 wherever it runs; what exec runs on a node is that
     * node's, as the job's task of one task per node there was (n2 of n[1-2] is 1). Set by /bin/sh, which a
     * container's image has where it may have no /usr/bin/env (a busybox bundle). */
    char index_str[16];
    int index = node_index(ji.node_list, c.node);
    if (index >= 0) {
        snprintf(index_str, sizeof index_str, "%d", index);
        args[k++] = "/bin/sh";
        args[k++] = "-c";
        args[k++] = "AZ_BATCHAI_TASK_INDEX=$0 && export AZ_BATCHAI_TASK_INDEX && exec \"$@\"";
        args[k++] = index_str;
    }
    for (int j = 0; j < n; j++)
        args[k++] = argv[i + 1 + j];
    execvp("srun", args);
    fprintf(stderr, "batchai-job: cannot run srun: %s\n", strerror(errno));
    return 1;
}

int bai_job_control_main(const char *cmd, int argc, char **argv)
{
    if (strcmp(cmd, "list") == 0)
        return cmd_list(argc, argv);
    if (strcmp(cmd, "terminate") == 0)
        return cmd_terminate(argc, argv);
    if (strcmp(cmd, "exec") == 0)
        return cmd_exec(argc, argv);
    fprintf(stderr, "batchai-job: unknown command '%s'\n", cmd);
    return 2;
}

int bai_scancel(const char *id, const char *state)
{
    char opt[64], *argv[4] = { "scancel", (char *)id, NULL, NULL }, *out = NULL, *err = NULL;
    if (state) {
        snprintf(opt, sizeof opt, "--state=%s", state);
        argv[1] = opt;
        argv[2] = (char *)id;
    }
    int rc = bai_run(argv, &out, &err);
    if (rc != 0)
        fprintf(stderr, "batchai-job: scancel %s: %s\n", id, err && err[0] ? err : "failed");
    free(out);
    free(err);
    return rc;
}
