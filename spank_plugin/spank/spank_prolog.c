/* Job prolog/epilog: prepare and clean up one node for a Batch AI job (see spank_prolog.h, SECURITY.md).
 *
 * Division of labour between root and the user:
 *  - root (this process) works only inside job_root, a tree that root owns and nobody else can write
 *    (checked component by component on every call), through directory fds: it makes <jobid> for the user
 *    and writes or removes, for this node, the failure marker <jobid>.prolog-failed-<node> and the verified
 *    copy of the job file <jobid>.job-<node> (rootfs.h) that the node's tasks use instead of the user's path;
 *  - a child that is the user reads the job file, and another, confined, parses and translates it into a
 *    plan (plan_child.h), which root binds to the job and holds to the site again: root parses no byte the
 *    user wrote;
 *  - a child that has fully become the user makes everything in the user's places
 *    (spank_user.c): the log directory, the mount links, the output and temp directories and the secrets
 *    file; every permission check there is the user's. This file has no chown, chmod, mkdir, open or rename
 *    by path;
 *  - user code (the preparation, mountCommand) never runs here: the batch script runs it as job steps.
 * Every child runs under the prolog's deadline and is killed with its session past it. */
#include "spank_prolog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "node/as_user.h"
#include "handoff.h"
#include "plan_child.h"
#include "spank_common.h"
#include "spank_user.h"

/* Facts about the job on this node, gathered once. */
struct node_job {
    uint32_t jobid;
    uid_t uid;
    gid_t gid;
    char jobid_s[16];
    const char *node;
    long long deadline_ms;
    int root_fd;          /* job_root, trusted */
    char marker[300];     /* the failure marker's name in job_root */
    char copy[300];       /* the job file's verified copy's name in job_root */
    char source[300];     /* the name in job_root of the file that says what the copy was loaded with */
    char job_file[PATH_MAX]; /* that path, once the job file is loaded */
    struct bai_wire_plan w; /* the job's plan, from the parser child, checked (plan_child.h) */
    char *text;           /* the job file's bytes the plan was made from, text_len of them */
    size_t text_len;
    bool loaded;          /* w and text are set */
    bool job_dir_ok;      /* <job_root>/<jobid> is the user's */
    char *job_dir, *log_dir;
    char err[BAI_WHY_MAX]; /* the first failure, for the marker */
};

static void fail(struct node_job *nj, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct node_job *nj, const char *fmt, ...)
{
    va_list ap;
    char msg[BAI_WHY_MAX];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    bai_error("batchai: job %u on %s: %s", nj->jobid, nj->node, msg);
    if (!nj->err[0])
        snprintf(nj->err, sizeof nj->err, "%s", msg);
}

static void first_message(void *arg, const char *msg)
{
    char *why = arg;
    if (!why[0])
        snprintf(why, BAI_WHY_MAX, "%s", msg);
}

static int prepare_as_user(struct node_job *nj)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
        fail(nj, "pipe: %s", strerror(errno));
        return -1;
    }
    struct bai_user_setup u = {.plan = nj->loaded && nj->job_dir_ok ? &nj->w.plan : NULL, .jobid = nj->jobid_s,
                               .node = nj->node, .log_dir = nj->log_dir, .status_fd = p[1]};
    int code = bai_run_as_user(nj->uid, nj->gid, p[1], nj->deadline_ms, bai_user_setup, &u);
    close(p[1]);
    char why[PATH_MAX + 64] = "";
    ssize_t n = read(p[0], why, sizeof why - 1);
    close(p[0]);
    why[n > 0 ? n : 0] = '\0';
    if (code == 0)
        return 0;
    if (code == 1) /* why: "<path>: <error>" of what could not be made, or "cannot ..." */
        fail(nj, "as uid %u: %s%s", (unsigned)nj->uid, strncmp(why, "cannot ", 7) == 0 ? "" : "cannot create ", why);
    else if (code == -2)
        fail(nj, "preparing the node as uid %u took longer than %d s (a file system that does not answer?)",
             (unsigned)nj->uid, BAI_PROLOG_DEADLINE_MS / 1000);
    else
        fail(nj, "preparing the node as uid %u failed (status %d)", (unsigned)nj->uid, code);
    return -1;
}

/* --- Root's side --- */

/* The job's id, user and node, the site settings and job_root. Returns 1 when the job does not use the
 * plugin, 0 when ready (root_fd is -1 when job_root cannot be trusted: the failure is recorded, and since
 * there is no place for a marker, the job's tasks find the same and report it), -1 when nothing can be
 * done (logged). */
static int node_job_open(spank_t sp, int ac, char **av, struct node_job *nj, struct bai_settings *site)
{
    char why[BAI_WHY_MAX];
    memset(nj, 0, sizeof *nj);
    nj->root_fd = -1;
    nj->deadline_ms = bai_now_ms() + BAI_PROLOG_DEADLINE_MS;
    if (!bai_option_value(sp))
        return 1;
    if (spank_get_item(sp, S_JOB_ID, &nj->jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &nj->uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &nj->gid) != ESPANK_SUCCESS) {
        bai_error("batchai: prolog: cannot get the job's id and user");
        return -1;
    }
    snprintf(nj->jobid_s, sizeof nj->jobid_s, "%u", nj->jobid);
    nj->node = getenv("SLURMD_NODENAME");
    if (!nj->node || bai_node_file_name(nj->marker, sizeof nj->marker, nj->jobid, BAI_NODE_FILE_FAILED, nj->node) != 0 ||
        bai_node_file_name(nj->copy, sizeof nj->copy, nj->jobid, BAI_NODE_FILE_JOB, nj->node) != 0 ||
        bai_node_file_name(nj->source, sizeof nj->source, nj->jobid, BAI_NODE_FILE_SOURCE, nj->node) != 0) {
        bai_error("batchai: job %u: unusable node name %s", nj->jobid, nj->node ? nj->node : "(none)");
        return -1;
    }
    if (bai_site_load(ac, av, site) != 0)
        return -1;
    nj->root_fd = bai_trusted_dir_open(site->job_root, true, why);
    if (nj->root_fd < 0) /* the job's tasks find the same and say so */
        fail(nj, "job_root %s cannot be used: %s (it must be a directory tree that only root can write; see "
             "SECURITY.md)", site->job_root, why);
    return 0;
}

static void node_job_close(struct node_job *nj)
{
    free(nj->job_dir);
    free(nj->log_dir);
    if (nj->loaded)
        bai_plan_free(&nj->w.plan);
    if (nj->text) {
        explicit_bzero(nj->text, nj->text_len);
        free(nj->text);
    }
    if (nj->root_fd >= 0)
        close(nj->root_fd);
}

/* The job file as the user reads it, parsed, validated and translated by a child that is the user
 * (plan_child.h), and its plan held to the site's policy here, on the node: whatever sbatch checked (or did
 * not: srun --batchai-job, the option passed in the environment) counts for nothing. */
static int load_job(struct node_job *nj, spank_t sp, int ac, char **av, const struct bai_settings *site)
{
    char why[BAI_WHY_MAX];
    /* The allocator handed over the absolute path; without it (srun --batchai-job making its own
     * allocation) the option's value must be absolute. */
    struct bai_handoff h;
    bai_handoff_get(sp, &h);
    const char *opt = h.job_file[0] ? h.job_file : bai_option_value(sp);
    if (!opt || opt[0] != '/') {
        fail(nj, "the job file's absolute path is unknown: submit with sbatch --batchai-job=FILE");
        return -1;
    }
    /* Half the prolog's time at most: a file that never answers still leaves time to make the log directory,
     * where the batch step's output, and the reason, go. */
    long long read_by = bai_now_ms() + BAI_PROLOG_DEADLINE_MS / 2;
    /* The snapshot sbatch handed over, when there is one: the job runs the file as it was at submission, and
     * the user's path is not read at all. It is a claim like the rest (anyone can submit through Slurm's
     * API): held to the digest and, below, to the whole policy. */
    const char *snapshot = bai_handoff_text();
    int rc = 0;
    if (snapshot) {
        nj->text_len = strlen(snapshot);
        nj->text = strdup(snapshot);
        rc = nj->text ? 0 : -1;
        snprintf(why, sizeof why, "%.200s: out of memory", opt);
    } else {
        struct bai_diag diag = {0};
        rc = bai_read_as_user(opt, nj->uid, nj->gid, read_by < nj->deadline_ms ? read_by : nj->deadline_ms,
                              &nj->text, &nj->text_len, &diag);
        char first[BAI_WHY_MAX] = "";
        bai_diag_each(&diag, first_message, first);
        bai_diag_free(&diag);
        snprintf(why, sizeof why, "%.200s: %.300s", opt, first);
    }
    if (rc == 0) {
        struct bai_plan_request rq = {.jobid = nj->jobid, .uid = nj->uid, .gid = nj->gid, .path = opt,
                                      .text = nj->text, .text_len = nj->text_len,
                                      .digest = h.digest[0] ? h.digest : NULL, .job_name = bai_name_value(sp),
                                      .user_shares = bai_share_value(sp),
                                      .cluster = bai_cluster_value(sp), .ac = ac, .av = av,
                                      .deadline_ms = read_by < nj->deadline_ms ? read_by : nj->deadline_ms};
        rc = bai_plan_get(&rq, site, &nj->w, why);
    }
    if (rc != 0) {
        fail(nj, "%s", why);
        /* The log directory sbatch planned (the user's word, used only by the user's child): where the batch
         * step's output, and with it the reason, can still go. */
        nj->log_dir = h.log_dir[0] ? bai_expand_jobid(h.log_dir, nj->jobid_s) : NULL;
        return -1;
    }
    nj->loaded = true;
    snprintf(nj->job_file, sizeof nj->job_file, "%s", opt);
    nj->job_dir = bai_expand_jobid(nj->w.plan.job_dir, nj->jobid_s);
    nj->log_dir = bai_expand_jobid(nj->w.plan.log_dir, nj->jobid_s);
    if (!nj->job_dir || !nj->log_dir) {
        fail(nj, "out of memory");
        return -1;
    }
    return 0;
}

/* <job_temp>/<jobid>.<node>: this node's temp (AZ_BATCHAI_JOB_TEMP, one per node also where several slurmd
 * share a host). The node's name is a plain file name (bai_node_file_name checked it). */
static void job_temp_name(const struct node_job *nj, char *out, size_t size)
{
    snprintf(out, size, "%s.%s", nj->jobid_s, nj->node);
}

/* This node's temp, the user's, 0700: made by root in the root-owned job_temp the same way as the job
 * directory, so no name a user chose is ever used. */
static int job_temp_create(struct node_job *nj, const struct bai_settings *site)
{
    char why[BAI_WHY_MAX], moved[BAI_WHY_MAX], name[300];
    job_temp_name(nj, name, sizeof name);
    int fd = bai_scratch_dir_reclaim(site->job_temp, moved, why);
    if (moved[0])
        bai_error("batchai: job %u on %s: job_temp %s", nj->jobid, nj->node, moved);
    if (fd < 0) {
        fail(nj, BAI_JOB_TEMP_REFUSED, site->job_temp, why);
        return -1;
    }
    int rc = bai_job_dir_create(fd, name, nj->uid, nj->gid, why);
    if (rc != 0)
        fail(nj, "job temp %s/%s: %s", site->job_temp, name, why);
    close(fd);
    return rc;
}

/* Remove <root_path>/<name> (root_fd), a directory of the job's user: a child that is the user removes its
 * contents, crossing no mount and following no link; root then removes the emptied directory. What stays (a
 * mount point inside, another user's directory, no time left) must not be found by the next job with this
 * id, a requeue or a wrapped-around id of another user's: root moves it aside, still the user's and private. */
static void job_tree_remove(const struct node_job *nj, int root_fd, const char *root_path, const char *name)
{
    char why[BAI_WHY_MAX];
    char *dir = NULL;
    if (bai_job_dir_check(root_fd, name, nj->uid, why) != 0 || asprintf(&dir, "%s/%s", root_path, name) < 0)
        return;
    int code = bai_run_as_user(nj->uid, nj->gid, -1, nj->deadline_ms, bai_user_remove_dir, dir);
    if (code != 0 || (unlinkat(root_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)) {
        char stale[350];
        snprintf(stale, sizeof stale, ".stale-%s-%lld", name, (long long)time(NULL));
        bool moved = renameat2(root_fd, name, root_fd, stale, RENAME_NOREPLACE) == 0;
        bai_error("batchai: job %u on %s: could not remove all of %s%s; %s%s/%s", nj->jobid, nj->node, dir,
                  code == -2 ? " in time" : "", moved ? "what is left is in " : "it stays at ", root_path,
                  moved ? stale : name);
    }
    free(dir);
}

int bai_slurmd_init(int ac, char **av)
{
    struct bai_settings site;
    char why[BAI_WHY_MAX];
    if (bai_site_load(ac, av, &site) != 0)
        return -1;
    int fd = bai_trusted_dir_open(site.job_root, true, why);
    if (fd < 0)
        bai_error("batchai: job_root %s cannot be used: %s; every Batch AI job on this node will fail until "
                  "it is a directory tree that only root can write (see SECURITY.md)", site.job_root, why);
    else
        close(fd);
    /* Made now, at slurmd's start, so that no user takes the name in a sticky parent (/tmp) first. */
    char moved[BAI_WHY_MAX];
    fd = bai_scratch_dir_reclaim(site.job_temp, moved, why);
    if (moved[0])
        bai_error("batchai: job_temp %s", moved);
    if (fd < 0)
        bai_error("batchai: job_temp %s cannot be used: %s; every Batch AI job on this node will fail until it "
                  "is a directory that only root can write (see SECURITY.md)", site.job_temp, why);
    else
        close(fd);
    bai_settings_free(&site);
    return 0;
}

/* The copy's source file (BAI_NODE_FILE_SOURCE): a step started without the options loads the copy as the
 * job's own steps do, with the same name, share maps and cluster. */
static int write_source(const struct node_job *nj, spank_t sp, char *why)
{
    const char *name = bai_name_value(sp), *shares = bai_share_value(sp), *cluster = bai_cluster_value(sp);
    char *text = NULL;
    int len = asprintf(&text, "%s%c%s%c%s%c%s%c", nj->job_file, 0, name ? name : "", 0, shares ? shares : "", 0,
                       cluster ? cluster : "", 0);
    if (len < 0) {
        snprintf(why, BAI_WHY_MAX, "out of memory");
        return -1;
    }
    int rc = bai_root_file_write(nj->root_fd, nj->source, text, (size_t)len, why);
    free(text);
    return rc;
}

int bai_job_prolog(spank_t sp, int ac, char **av)
{
    struct node_job nj;
    struct bai_settings site = {0};
    char why[BAI_WHY_MAX];
    if (node_job_open(sp, ac, av, &nj, &site) == 0) {
        if (nj.root_fd >= 0) { /* stale ones of a reused job id */
            (void)unlinkat(nj.root_fd, nj.marker, 0);
            (void)unlinkat(nj.root_fd, nj.copy, 0);
            (void)unlinkat(nj.root_fd, nj.source, 0);
        }
        if (load_job(&nj, sp, ac, av, &site) == 0 && nj.root_fd >= 0) {
            /* What the tasks will use: the bytes read and checked here. A task that read the user's path
             * again could hang on it for good (a file system that stops answering after this read), and a
             * process stuck in the kernel's wait stays in the step's cgroup, which then never empties. */
            if (bai_root_file_write(nj.root_fd, nj.copy, nj.text, nj.text_len, why) != 0 ||
                write_source(&nj, sp, why) != 0)
                fail(&nj, "cannot keep the job file in job_root %s: %s", site.job_root, why);
            if (bai_job_dir_create(nj.root_fd, nj.jobid_s, nj.uid, nj.gid, why) == 0)
                nj.job_dir_ok = true;
            else
                fail(&nj, "job directory %s: %s", nj.job_dir, why);
            if (nj.job_dir_ok && job_temp_create(&nj, &site) != 0)
                nj.job_dir_ok = false;
        }
        if (nj.log_dir)
            (void)prepare_as_user(&nj);
        if (nj.err[0] && nj.root_fd >= 0 && bai_root_file_write(nj.root_fd, nj.marker, nj.err, strlen(nj.err), why) != 0)
            bai_error("batchai: job %u on %s: cannot write the marker in %s: %s", nj.jobid, nj.node, site.job_root, why);
    }
    bai_settings_free(&site);
    node_job_close(&nj);
    return 0; /* never drain a node: the job's tasks fail with the reason */
}

int bai_job_epilog(spank_t sp, int ac, char **av)
{
    struct node_job nj;
    struct bai_settings site = {0};
    char why[BAI_WHY_MAX];
    if (node_job_open(sp, ac, av, &nj, &site) == 0 && nj.root_fd >= 0) {
        /* <job_root>/<jobid> and <job_temp>/<jobid>.<node> are the job's whatever the job file says, and the
         * file may be gone. A job_temp that cannot be trusted now holds nothing root made. */
        job_tree_remove(&nj, nj.root_fd, site.job_root, nj.jobid_s);
        int temp_fd = bai_scratch_dir_open(site.job_temp, why);
        if (temp_fd >= 0) {
            char name[300];
            job_temp_name(&nj, name, sizeof name);
            job_tree_remove(&nj, temp_fd, site.job_temp, name);
            close(temp_fd);
        }
        (void)unlinkat(nj.root_fd, nj.marker, 0);
        (void)unlinkat(nj.root_fd, nj.copy, 0);
        (void)unlinkat(nj.root_fd, nj.source, 0);
    }
    bai_settings_free(&site);
    node_job_close(&nj);
    return 0;
}
