/* Remote context: every step of a Batch AI job on every node (the batch step, the preparation steps, the
 * main step).
 *
 * All the work happens in task_init, in each task's own process after slurmstepd has made it the job's
 * user and just before it runs the task: the job file is read with the user's rights and no more, checked
 * against the digest sbatch validated and the site's policy, the environment of the task is set from the
 * plan (secrets excepted: the steps that need them source the job's 0600 secrets file, so their values
 * never reach srun's environment or a container's config.json), and a failure ends only that task
 * with exit status 1 and the reason on its stderr. Failing user_init instead would make slurmd drain the
 * node ("batch job complete failure") for what is the user's error. */
#include "spank_remote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "node/as_user.h"
#include "handoff.h"
#include "jobfile/batchai_jobfile.h"
#include "strbuf.h"
#include "spank_common.h"

int bai_remote_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    /* The option must be registered here too, or Slurm does not forward its value to the node. Settings
     * are read in user_init, where they are used. */
    return bai_option_register(sp);
}

/* What the prolog left, read by root in task_init_privileged (the files are root's, 0600, so that no other
 * user reads why a job failed or what its file says) and judged by task_init, in the same task process, once
 * it is the user and knows its node's name (SLURMD_NODENAME is not in the task's environment yet while it is
 * root): job_root must be the trusted tree the prolog used; for the node, no failure marker and a verified
 * copy of the job file (rootfs.h), each a regular file of root's; the job directory a real directory of the
 * job's user. Every open is O_NONBLOCK and O_NOFOLLOW in a tree only root can write: nothing here can stall on
 * a FIFO or be led elsewhere, and the task never reads the user's path, which could stop answering for good
 * after the prolog's read (a process stuck in the kernel's wait for it could never leave the step). */
/* Nodes that share a host and a job_root (one on a real cluster; every node of a local test cluster, whose
 * hosts share the machine's /var/lib): as many as job_root holds files for, in an array that grows. */
struct seen_node {
    char node[128];
    int failed;               /* 1: a marker with `reason`; -1: something else is there (reason says) */
    int copy;                 /* 1: job holds the copy; -1: something else is there (copy_why says) */
    char reason[BAI_WHY_MAX], copy_why[BAI_WHY_MAX];
    char *job;                /* the copy's bytes, job_len of them */
    size_t job_len;
    char *source;             /* what the copy was loaded with (BAI_NODE_FILE_SOURCE), or NULL: */
    const char *path, *name, *shares, *cluster; /* the job file's path, --batchai-name, --batchai-share,
                                                 * --batchai-cluster (NULL: none) */
};
static struct {
    bool read;                    /* task_init_privileged ran (for every job: a step without the option may be a
                                   * Batch AI job's, step_of_prepared_job) */
    char root_why[BAI_WHY_MAX];   /* non-empty: job_root cannot be trusted */
    char dir_why[BAI_WHY_MAX];    /* non-empty: the job directory is not the user's */
    int n, cap;
    struct seen_node *node;
} seen;

/* seen's entry for `node`, made when `make` (NULL when out of memory or the name is too long); NULL when not
 * there otherwise. */
static struct seen_node *seen_node(const char *node, bool make)
{
    for (int i = 0; i < seen.n; i++)
        if (strcmp(seen.node[i].node, node) == 0)
            return &seen.node[i];
    if (!make || strlen(node) >= sizeof seen.node[0].node)
        return NULL;
    if (seen.n == seen.cap) {
        int cap = seen.cap ? 2 * seen.cap : 8;
        struct seen_node *more = cap > 0 ? realloc(seen.node, (size_t)cap * sizeof *more) : NULL;
        if (!more)
            return NULL; /* that node finds no verdict of its own and fails closed */
        seen.node = more;
        seen.cap = cap;
    }
    memset(&seen.node[seen.n], 0, sizeof seen.node[0]);
    snprintf(seen.node[seen.n].node, sizeof seen.node[0].node, "%s", node);
    return &seen.node[seen.n++];
}

/* The source file `name` into n: four NUL-ended values, the first an absolute path; anything else leaves
 * n->source NULL, and a step without the options is then not taken for the job's. */
static void read_source(int root_fd, const char *name, struct seen_node *n)
{
    char *text = NULL, why[BAI_WHY_MAX];
    size_t len;
    if (bai_root_file_read(root_fd, name, 4 * PATH_MAX, &text, &len, why) != 1)
        return;
    const char *v[4], *p = text, *end = text + len;
    int k = 0;
    for (; k < 4 && p < end; k++) {
        v[k] = p;
        p += strlen(p) + 1; /* the reader's NUL ends the last value at worst */
    }
    if (k != 4 || p != end || v[0][0] != '/') {
        free(text);
        return;
    }
    n->source = text;
    n->path = v[0];
    n->name = v[1][0] ? v[1] : NULL;
    n->shares = v[2][0] ? v[2] : NULL;
    n->cluster = v[3][0] ? v[3] : NULL;
}

static void read_prolog_verdict(const char *job_root, uint32_t jobid, const char *jobid_s, uid_t uid)
{
    seen.read = true;
    int root_fd = bai_trusted_dir_open(job_root, false, seen.root_why);
    if (root_fd < 0)
        return;
    seen.root_why[0] = '\0';
    if (bai_job_dir_check(root_fd, jobid_s, uid, seen.dir_why) == 0)
        seen.dir_why[0] = '\0';
    int fd = dup(root_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        const char *failed = bai_node_file_node(e->d_name, jobid, BAI_NODE_FILE_FAILED);
        const char *copy = failed ? NULL : bai_node_file_node(e->d_name, jobid, BAI_NODE_FILE_JOB);
        const char *source = failed || copy ? NULL : bai_node_file_node(e->d_name, jobid, BAI_NODE_FILE_SOURCE);
        struct seen_node *n = failed || copy || source ? seen_node(failed ? failed : copy ? copy : source, true) : NULL;
        if (n && source) {
            free(n->source);
            n->source = NULL;
            read_source(root_fd, e->d_name, n);
            continue;
        }
        if (n && failed) {
            char *text = NULL;
            size_t len;
            n->failed = bai_root_file_read(root_fd, e->d_name, BAI_WHY_MAX - 1, &text, &len, n->reason);
            if (text)
                snprintf(n->reason, sizeof n->reason, "%s", text);
            free(text);
        } else if (n)
            n->copy = bai_root_file_read(root_fd, e->d_name, BAI_JOB_MAX_BYTES, &n->job, &n->job_len, n->copy_why);
    }
    if (d)
        closedir(d);
    else if (fd >= 0)
        close(fd);
    close(root_fd);
}

/* Forget what was read; the copy is wiped: it may hold secrets' values. */
static void forget_prolog_verdict(void)
{
    for (int i = 0; i < seen.n; i++) {
        if (seen.node[i].job) {
            explicit_bzero(seen.node[i].job, seen.node[i].job_len);
            free(seen.node[i].job);
        }
        free(seen.node[i].source);
    }
    free(seen.node);
    memset(&seen, 0, sizeof seen);
}

/* 0 when the prolog prepared `node` and left the job file's copy, else -1 with the reason logged. */
static int check_prolog(const char *job_root, uint32_t jobid, const char *node)
{
    const struct seen_node *n = seen_node(node, false);
    if (!seen.read) {
        bai_error("batchai: job %u: node %s: the plugin's privileged check did not run", jobid, node);
        return -1;
    }
    if (seen.root_why[0]) {
        bai_error("batchai: job %u: node %s was not prepared: job_root %s: %s", jobid, node, job_root, seen.root_why);
        return -1;
    }
    if (n && n->failed == 1) {
        bai_error("batchai: job %u: preparing node %s failed: %s", jobid, node, n->reason);
        return -1;
    }
    if (n && n->failed == -1) {
        bai_error("batchai: job %u: node %s: %s", jobid, node, n->reason);
        return -1;
    }
    if (!n && seen.dir_why[0]) { /* nothing of the prolog's for this job: it did not run for it */
        bai_error("batchai: job %u: node %s was not prepared: the plugin's prolog did not run for this job there "
                  "(the option was set outside sbatch --batchai-job, or Slurm ran no prolog: README.md, "
                  "Troubleshooting)", jobid, node);
        return -1;
    }
    if (seen.dir_why[0]) {
        bai_error("batchai: job %u: node %s was not prepared (%s/%s); the slurmd log of %s says why", jobid, node,
                  job_root, seen.dir_why, node);
        return -1;
    }
    if (!n || n->copy != 1) {
        bai_error("batchai: job %u: node %s was not prepared: %s (the prolog keeps the job file it checked there; "
                  "a prolog of an older plugin keeps none)", jobid, node,
                  n && n->copy == -1 ? n->copy_why : "no copy of the job file in job_root");
        return -1;
    }
    return 0;
}

int bai_remote_task_privileged(spank_t sp, int ac, char **av)
{
    uint32_t jobid;
    uid_t uid;
    char jobid_s[16];
    struct bai_settings site;
    /* Without the option too: a step of a Batch AI job started without it (srun --jobid=J --overlap, as
     * batchai-job exec does) is known by what this node's prolog left for the job (task_init). */
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
        return 0; /* task_init: "the plugin's privileged check did not run" */
    snprintf(jobid_s, sizeof jobid_s, "%u", jobid);
    if (bai_site_load(ac, av, &site) != 0)
        return 0; /* logged; task_init fails on the same settings */
    read_prolog_verdict(site.job_root, jobid, jobid_s, uid);
    bai_settings_free(&site);
    return 0; /* the task fails in task_init, as the user, with the reason on its stderr */
}

/* A job with the user's own script: run the node steps (mountCommand, preparation) exactly as the rendered
 * script would, from the batch step, as the user (this process already is), inside the job's allocation,
 * accounting and time limit. The shell gets the job's environment, so srun finds the allocation. */
static int run_node_steps(spank_t sp, const struct bai_plan *plan, uint32_t jobid)
{
    char *script = bai_render_node_script(plan);
    char **env = NULL;
    if (!script) {
        bai_error("batchai: job %u: out of memory", jobid);
        return -1;
    }
    if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || !env) {
        bai_error("batchai: job %u: cannot get the job's environment", jobid);
        free(script);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0)
            _exit(126);
        char *argv[] = {"/bin/sh", "-c", script, NULL};
        execve(argv[0], argv, env);
        _exit(127);
    }
    free(script);
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        bai_error("batchai: job %u: the job's node steps (mountCommand, preparation) failed%s", jobid,
                  pid < 0 ? ": cannot fork" : "; the messages above say where");
        return -1;
    }
    return 0;
}

static int set_env(spank_t sp, const struct bai_plan *plan, const char *jobid_s, uint32_t jobid, const char *node)
{
    struct sbuf names = {0};
    for (size_t i = 0; i < plan->n_env; i++) {
        const struct bai_plan_env *e = &plan->env[i];
        if (e->secret) /* only the steps that source the job's secrets file see them */
            continue;
        sb_printf(&names, "%s%s", names.len ? " " : "", e->name);
        char *j = bai_expand_jobid(e->value, jobid_s);
        char *v = j ? bai_expand_node(j, node) : NULL;
        spank_err_t err = v ? spank_setenv(sp, e->name, v, 1) : ESPANK_ERROR;
        free(j);
        free(v);
        if (err != ESPANK_SUCCESS) {
            /* Name only: the value may be a secret. */
            bai_error("batchai: job %u: cannot set %s: %s", jobid, e->name, spank_strerror(err));
            free(sb_finish(&names));
            return -1;
        }
    }
    /* What batchai-job exec hands on to a step in the job's container (batchai_jobfile.h). */
    char *list = sb_finish(&names);
    int rc = list && spank_setenv(sp, BAI_JOB_VARS_VAR, list, 1) == ESPANK_SUCCESS &&
             (!plan->container_arg || spank_setenv(sp, BAI_CONTAINER_VAR, plan->container_arg, 1) == ESPANK_SUCCESS)
             ? 0 : -1;
    if (rc != 0)
        bai_error("batchai: job %u: cannot set %s or %s", jobid, BAI_JOB_VARS_VAR, BAI_CONTAINER_VAR);
    free(list);
    return rc;
}

/* What Slurm gave this task, not the site's figure: AZ_BATCHAI_NUM_GPUS is the job's GPUs on this node
 * (SLURM_GPUS_ON_NODE, which slurmstepd sets with CUDA_VISIBLE_DEVICES before the task plugins run; absent:
 * none), and LOCAL_RANK the task's rank on its node (SLURM_LOCALID), as a toolkit's launcher sets it. */
static int set_gpu_env(spank_t sp, bool batch_step)
{
    char gpus[16] = "0", local[16];

    if (spank_getenv(sp, "SLURM_GPUS_ON_NODE", gpus, sizeof gpus) != ESPANK_SUCCESS || !gpus[0])
        snprintf(gpus, sizeof gpus, "0");
    if (spank_setenv(sp, "AZ_BATCHAI_NUM_GPUS", gpus, 1) != ESPANK_SUCCESS)
        return -1;
    /* The NVIDIA container hooks (enroot's under pyxis, nvidia-container-runtime's under oci) mount the GPUs
     * NVIDIA_VISIBLE_DEVICES names, by the host's numbers, which a task does not know under ConstrainDevices
     * (Slurm renumbers its variables from 0 there). "all" mounts the node's GPUs, and Slurm's choice stands
     * as on the host: the devices cgroup opens the task's own, CUDA_VISIBLE_DEVICES selects them. */
    if (strcmp(gpus, "0") != 0 && spank_setenv(sp, "NVIDIA_VISIBLE_DEVICES", "all", 1) != ESPANK_SUCCESS)
        return -1;
    /* Not in the batch step: the steps it starts would inherit its 0 through srun's environment. */
    int local_id;
    if (batch_step)
        return 0;
    if (spank_get_item(sp, S_TASK_ID, &local_id) == ESPANK_SUCCESS)
        snprintf(local, sizeof local, "%d", local_id);
    else if (spank_getenv(sp, "SLURM_LOCALID", local, sizeof local) != ESPANK_SUCCESS)
        return 0;
    return spank_setenv(sp, "LOCAL_RANK", local, 1) == ESPANK_SUCCESS ? 0 : -1;
}

/* A step started without the option in a job whose prolog prepared this node for the plugin: it left the
 * verified copy of the job file and its path here. Such a step is the job's user's (or root's: Slurm lets
 * no one else start one), so it gets the job's environment as every step does: the same values, from the
 * same checked copy, secrets excepted. Any other step is not a Batch AI job's. */
static bool step_of_prepared_job(spank_t sp)
{
    char node[256];
    if (!seen.read || spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node) != ESPANK_SUCCESS)
        return false;
    const struct seen_node *n = seen_node(node, false);
    return n && n->copy == 1 && n->source;
}

int bai_remote_task_init(spank_t sp, int ac, char **av)
{
    const char *opt = bai_option_value(sp);
    uint32_t jobid, stepid, nnodes, rank;
    char rank_s[16];
    char jobid_s[16], node[256] = "node", submit_dir[PATH_MAX] = "";
    struct bai_loaded l;
    bool loaded = false;
    char *job_file = NULL;
    int rc = -1;

    bai_handoff_drop_text(sp);
    if (!opt && !step_of_prepared_job(sp)) {
        forget_prolog_verdict();
        return 0; /* not a Batch AI job */
    }
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS) {
        bai_error("batchai: cannot get the job's id, step and size");
        return -1;
    }
    /* The batch step reports 0 nodes in S_JOB_NNODES; its environment has the job's node count. */
    char nodes_s[16];
    if (spank_getenv(sp, "SLURM_JOB_NUM_NODES", nodes_s, sizeof nodes_s) == ESPANK_SUCCESS)
        nnodes = (uint32_t)strtoul(nodes_s, NULL, 10);
    snprintf(jobid_s, sizeof jobid_s, "%u", jobid);
    (void)spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node);

    /* The allocator passed the absolute path and the content's digest; a relative option value (srun inside
     * the job) is relative to the submit directory. */
    struct bai_handoff h;
    bai_handoff_get(sp, &h);
    if (!opt) { /* the path, name and share maps the prolog loaded the copy with; it checked the copy against
                 * sbatch's digest, and the site's policy is applied to it again below */
        memset(&h, 0, sizeof h);
        const struct seen_node *prepared = seen_node(node, false);
        if (!prepared || !prepared->path) { /* step_of_prepared_job found both; checked where used all the same */
            bai_error("batchai: job %u: node %s has no record of the job file the prolog checked", jobid, node);
            goto out;
        }
        job_file = strdup(prepared->path);
    } else if (h.job_file[0])
        job_file = strdup(h.job_file);
    else {
        (void)spank_getenv(sp, "SLURM_SUBMIT_DIR", submit_dir, sizeof submit_dir);
        job_file = bai_abspath(opt, submit_dir);
    }
    if (!job_file) {
        bai_error("batchai: out of memory");
        goto out;
    }
    /* The prolog's verdict for this node first; then the job file as the prolog read and checked it, held
     * again to the digest sbatch validated and to the site's policy. */
    struct bai_settings site;
    if (bai_site_load(ac, av, &site) != 0)
        goto out;
    int prepared_here = check_prolog(site.job_root, jobid, node);
    bai_settings_free(&site);
    if (prepared_here != 0)
        goto out;
    const struct seen_node *n = seen_node(node, false);
    if (!n || n->copy != 1) { /* check_prolog refused both; checked where used all the same */
        bai_error("batchai: job %u: node %s has no copy of the job file the prolog checked", jobid, node);
        goto out;
    }
    struct bai_source src = {.path = job_file, .content = n->job, .content_len = n->job_len,
                             .digest = h.digest[0] ? h.digest : NULL,
                             .job_name = opt ? bai_name_value(sp) : n->name,
                             .user_shares = opt ? bai_share_value(sp) : n->shares,
                             .cluster = opt ? bai_cluster_value(sp) : n->cluster};
    if (bai_load(&l, ac, av, &src, BAI_JOB_POLICY, NULL) != 0) {
        bai_error("batchai: job %u: the job file %s cannot be used on node %s", jobid, job_file, node);
        goto out;
    }
    loaded = true;

    if (stepid == SLURM_BATCH_SCRIPT && h.script == BAI_SCRIPT_USER) {
        /* The task's stdout is the job's output: where batchai-job status learns that this is a Batch AI job
         * and where its logs are (batchai_jobfile.h), also when the checks below fail it. Best effort: the job runs
         * either way. */
        char *logs = bai_expand_jobid(l.file.plan.log_dir, jobid_s);
        if (logs)
            dprintf(STDOUT_FILENO, BAI_OWN_SCRIPT_LINE, jobid_s, job_file, logs);
        free(logs);
        if (nnodes != (uint32_t)l.file.job.node_count) {
            bai_error("batchai: job %u: the allocation has %u node(s) but %s asks for nodeCount %d; "
                      "submit with --nodes=%d or without a script",
                      jobid, nnodes, job_file, l.file.job.node_count, l.file.job.node_count);
            goto out;
        }
        if (bai_plan_has_node_steps(&l.file.plan) && run_node_steps(sp, &l.file.plan, jobid) != 0)
            goto out;
    }
    if (set_env(sp, &l.file.plan, jobid_s, jobid, node) != 0)
        goto out;
    if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS) {
        bai_error("batchai: job %u: cannot get the task's rank", jobid);
        goto out;
    }
    snprintf(rank_s, sizeof rank_s, "%u", rank);
    if (spank_setenv(sp, "AZ_BATCHAI_TASK_INDEX", rank_s, 1) != ESPANK_SUCCESS || set_gpu_env(sp, stepid == SLURM_BATCH_SCRIPT) != 0)
        goto out;
    /* Last, once everything above held: what every step of the rendered script checks (steps.h). */
    char prepared[sizeof jobid_s + sizeof node + 1];
    snprintf(prepared, sizeof prepared, "%s:%s", jobid_s, node);
    char built[32];
    snprintf(built, sizeof built, "%d.%02d.%d", SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
             SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
    if (spank_setenv(sp, BAI_PLUGIN_SLURM_VAR, built, 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, BAI_PREPARED_VAR, prepared, 1) != ESPANK_SUCCESS)
        goto out;
    rc = 0;
out:
    free(job_file);
    if (loaded)
        bai_loaded_free(&l);
    forget_prolog_verdict();
    return rc;
}
