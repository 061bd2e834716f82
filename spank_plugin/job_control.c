/* batchai-job list/terminate/exec: the tutorial's `az batchai job list`, `job terminate` and
 * `job node exec`, through Slurm's own commands, so Slurm's permission checks are the ones that apply. */
#include "job_control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "render.h"
#include "slurm_job.h"
#include "slurm_read.h"
#include "translate.h"

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

/* SIGTERM to every step and the batch shell (a checkpointing main step saves and exits: cifar-train ends
 * 3, resumable), then, after the grace, scancel, which Slurm ends with SIGKILL after its KillWait. */
static int cmd_terminate(int argc, char **argv)
{
    long grace = 30;
    if (argc == 3 && strcmp(argv[1], "--grace") == 0) {
        char *end;
        grace = strtol(argv[2], &end, 10);
        if (*end || grace < 0) {
            fprintf(stderr, "batchai-job terminate: --grace wants seconds, not '%s'\n", argv[2]);
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
    if (strcmp(bai_job_execution_state(&ji), "running") == 0) {
        char *sig[] = {"scancel", "--signal=TERM", "--full", ji.id, NULL};
        if (run_loud(sig) != 0)
            return 1;
        for (long waited = 0; waited < grace * 2; waited++) {
            usleep(500 * 1000);
            if (bai_job_load(ji.id, &ji, why, sizeof why) != 0 || bai_job_ended(&ji))
                break;
        }
    }
    if (!bai_job_ended(&ji)) {
        char *cancel[] = {"scancel", ji.id, NULL};
        if (run_loud(cancel) != 0)
            return 1;
    }
    printf("job %s: terminated\n", ji.id);
    return 0;
}

/* The srun option of the job's container, from the batch script Slurm keeps for the job, whose header
 * bai_render_script() wrote (the job's owner may read it): *option NULL when the job has no container. */
static int job_container(const char *id, char **option)
{
    char *argv[] = {"scontrol", "write", "batch_script", (char *)id, "-", NULL};
    char *out, *err;
    int st = bai_run(argv, &out, &err), rc = 0;
    *option = NULL;
    if (st != 0) {
        fprintf(stderr, "batchai-job: cannot read job %s's batch script to find its container: %s\n", id,
                err && err[0] ? err : "scontrol write batch_script failed");
        rc = 1;
    } else if (bai_script_container(out, option) < 0) {
        fprintf(stderr, "batchai-job: job %s's batch script names its container in a line batchai-job cannot "
                        "read\n", id);
        rc = 1;
    }
    free(out);
    free(err);
    return rc;
}

/* srun --overlap into the job's allocation, without the plugin's option: the plugin's remote side gives any
 * step of a Batch AI job its context (the AZ_BATCHAI_* environment and mounts) from what the prolog left on
 * the node (the job file's copy it verified, and the path that names the job), so the job file itself may
 * have been edited or deleted since submission. A job whose steps run in a container (--container=BUNDLE or
 * --container-image=IMAGE) gets the command run in it too, with the same option. Slurm refuses another
 * user's job itself. */
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
    if (own && !bai_job_is_batchai(&ji)) {
        fprintf(stderr, "batchai-job: job %s is not a Batch AI or Azure ML job (it was not submitted with "
                        "--batchai-job)\n", ji.id);
        return 1;
    }
    if (own && strcmp(bai_job_execution_state(&ji), "running") != 0) {
        fprintf(stderr, "batchai-job: job %s is %s: exec needs a running job\n", ji.id, bai_job_execution_state(&ji));
        return 1;
    }
    char *container = NULL;
    if (own && job_container(ji.id, &container) != 0)
        return 1;
    char *jobopt = NULL, *nodeopt = NULL;
    if (asprintf(&jobopt, "--jobid=%s", ji.id) < 0 || asprintf(&nodeopt, "--nodelist=%s", node ? node : "") < 0) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return 1;
    }
    int n = argc - i - 1, k = 0;
    char **args = calloc((size_t)n + 12, sizeof *args);
    if (!args) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return 1;
    }
    args[k++] = "srun";
    args[k++] = jobopt;
    args[k++] = "--overlap";
    args[k++] = "--nodes=1";
    args[k++] = "--ntasks=1";
    if (node)
        args[k++] = nodeopt;
    if (container)
        args[k++] = container;
    args[k++] = "--";
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
