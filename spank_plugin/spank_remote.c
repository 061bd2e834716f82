/* Remote context: every step of a Batch AI job on every node (the batch step, the preparation steps, the
 * main step).
 *
 * All the work happens in task_init, in each task's own process after slurmstepd has made it the job's
 * user and just before it runs the task: the job file is read with the user's rights and no more, the
 * environment of the task is set from the plan, secrets included (their values exist only in the tasks'
 * environment, never in the batch script, the job record or a log), and a failure ends only that task
 * with exit status 1 and the reason on its stderr. Failing user_init instead would make slurmd drain the
 * node ("batch job complete failure") for what is the user's error. */
#include "spank_remote.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "spank_common.h"
#include "spank_prolog.h"

int bai_remote_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    /* The option must be registered here too, or Slurm does not forward its value to the node. Settings
     * are read in user_init, where they are used. */
    return bai_option_register(sp);
}

/* The prolog's verdict for this node: 0 when it prepared the node, else -1 with the reason logged. */
static int check_prolog(uint32_t jobid, const char *job_dir, const char *node)
{
    struct stat st;
    char why[1024] = "";
    if (lstat(job_dir, &st) != 0) {
        slurm_error("batchai: job %u: node %s was not prepared (%s is missing); the slurmd log of %s "
                    "says why",
                    jobid, node, job_dir, node);
        return -1;
    }
    char *marker = bai_prolog_failure_path(job_dir, node);
    if (!marker)
        return -1;
    int fd = open(marker, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    free(marker);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, why, sizeof why - 1);
    close(fd);
    why[n > 0 ? n : 0] = '\0';
    why[strcspn(why, "\n")] = '\0';
    slurm_error("batchai: job %u: preparing node %s failed: %s", jobid, node, why);
    return -1;
}

/* For a job with the user's own script the prologs ran the preparation on every node and logged each
 * result in <log_dir>/execution-<node>.log, on the share every node sees. With PrologFlags=Alloc the batch
 * step starts only after every node's prolog, so the batch step checks them all here. */
static int check_preparation(uint32_t jobid, const char *log_dir)
{
    static const char key[] = "job preparation finished with exit code ";
    char pattern[PATH_MAX];
    glob_t g;
    int rc = 0;
    snprintf(pattern, sizeof pattern, "%s/execution-*.log", log_dir);
    if (glob(pattern, 0, NULL, &g) != 0)
        return 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "re");
        char line[512];
        int code = 0;
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            char *k = strstr(line, key);
            if (k)
                code = atoi(k + sizeof key - 1);
        }
        fclose(f);
        if (code != 0) {
            const char *node = strrchr(g.gl_pathv[i], '/') + sizeof "/execution-" - 1;
            int len = (int)(strlen(node) - sizeof ".log" + 1);
            slurm_error("batchai: job %u: job preparation failed on node %.*s with exit code %d (see "
                        "stderr-job_prep-%.*s.txt in %s)",
                        jobid, len, node, code, len, node, log_dir);
            rc = -1;
        }
    }
    globfree(&g);
    return rc;
}

static int set_env(spank_t sp, const struct bai_plan *plan, const char *jobid_s, uint32_t jobid)
{
    for (size_t i = 0; i < plan->n_env; i++) {
        const struct bai_plan_env *e = &plan->env[i];
        if (!e->value) {
            slurm_error("batchai: job %u: secret %s refers to a key vault, which this site cannot read; "
                        "it is not set",
                        jobid, e->name);
            continue;
        }
        char *v = bai_expand_jobid(e->value, jobid_s);
        spank_err_t err = v ? spank_setenv(sp, e->name, v, 1) : ESPANK_ERROR;
        free(v);
        if (err != ESPANK_SUCCESS) {
            /* Name only: the value may be a secret. */
            slurm_error("batchai: job %u: cannot set %s: %s", jobid, e->name, spank_strerror(err));
            return -1;
        }
    }
    return 0;
}

int bai_remote_task_init(spank_t sp, int ac, char **av)
{
    const char *opt = bai_option_value(sp);
    uint32_t jobid, stepid, nnodes, rank;
    char rank_s[16];
    char jobid_s[16], node[256] = "node", submit_dir[PATH_MAX] = "", path[PATH_MAX] = "";
    char script[32] = "";
    struct bai_loaded l;
    bool loaded = false;
    char *job_file = NULL, *job_dir = NULL, *log_dir = NULL;
    int rc = -1;

    if (!opt)
        return 0;
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS) {
        slurm_error("batchai: cannot get the job's id, step and size");
        return -1;
    }
    /* The batch step reports 0 nodes in S_JOB_NNODES; its environment has the job's node count. */
    char nodes_s[16];
    if (spank_getenv(sp, "SLURM_JOB_NUM_NODES", nodes_s, sizeof nodes_s) == ESPANK_SUCCESS)
        nnodes = (uint32_t)strtoul(nodes_s, NULL, 10);
    snprintf(jobid_s, sizeof jobid_s, "%u", jobid);
    (void)spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node);

    /* The allocator passed the absolute path; a relative option value (srun inside the job) is relative
     * to the submit directory. */
    if (spank_getenv(sp, "SLURM_SPANK_" BAI_CTL_JOB_FILE, path, sizeof path) == ESPANK_SUCCESS && path[0] == '/')
        job_file = strdup(path);
    else {
        (void)spank_getenv(sp, "SLURM_SUBMIT_DIR", submit_dir, sizeof submit_dir);
        job_file = bai_abspath(opt, submit_dir);
    }
    if (!job_file) {
        slurm_error("batchai: out of memory");
        goto out;
    }
    /* This process already is the user: read the file directly. */
    if (bai_load(&l, ac, av, job_file, (uid_t)-1, (gid_t)-1, NULL) != 0) {
        slurm_error("batchai: job %u: the job file %s cannot be used on node %s", jobid, job_file, node);
        goto out;
    }
    loaded = true;
    job_dir = bai_expand_jobid(l.plan.job_dir, jobid_s);
    if (!job_dir || check_prolog(jobid, job_dir, node) != 0)
        goto out;

    if (stepid == SLURM_BATCH_SCRIPT &&
        spank_getenv(sp, "SLURM_SPANK_" BAI_CTL_SCRIPT, script, sizeof script) == ESPANK_SUCCESS &&
        strcmp(script, "generated") != 0) {
        if (nnodes != (uint32_t)l.job.node_count) {
            slurm_error("batchai: job %u: the allocation has %u node(s) but %s asks for nodeCount %d; "
                        "submit with --nodes=%d or without a script",
                        jobid, nnodes, job_file, l.job.node_count, l.job.node_count);
            goto out;
        }
        log_dir = bai_expand_jobid(l.plan.log_dir, jobid_s);
        if (!log_dir || check_preparation(jobid, log_dir) != 0)
            goto out;
    }
    if (set_env(sp, &l.plan, jobid_s, jobid) != 0)
        goto out;
    if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS) {
        slurm_error("batchai: job %u: cannot get the task's rank", jobid);
        goto out;
    }
    snprintf(rank_s, sizeof rank_s, "%u", rank);
    if (spank_setenv(sp, "AZ_BATCHAI_TASK_INDEX", rank_s, 1) != ESPANK_SUCCESS)
        goto out;
    rc = 0;
out:
    free(job_file);
    free(job_dir);
    free(log_dir);
    if (loaded)
        bai_loaded_free(&l);
    return rc;
}

