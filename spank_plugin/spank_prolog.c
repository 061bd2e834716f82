/* Job prolog/epilog: prepare and clean up one node for a Batch AI job.
 *
 * Division of labour between root and the user:
 *  - root (this process) creates only <job_root> (if missing) and <job_root>/<jobid>, which it hands to the
 *    job's user;
 *  - everything inside it, the mount points, the log directory and the output directories are created by
 *    a child that has fully become the user (bai_run_as_user), so every permission check is the user's
 *    and no file is created or followed on the user's behalf with root's rights;
 *  - mounts are symlinks <job_dir>/mounts/<relativeMountPath> -> <site path>: they need no root, belong to
 *    the user, vanish with the job, and access to the data stays governed by the site path's own
 *    permissions.
 * A failure never fails the prolog, since Slurm would drain the node for what is a user's error. It is
 * written to <job_dir>/.prolog-failed-<node> and to the slurmd log; user_init then fails the job with it. */
#include "spank_prolog.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spank_common.h"

char *bai_prolog_failure_path(const char *job_dir, const char *node)
{
    char *p = NULL;
    if (asprintf(&p, "%s/.prolog-failed-%s", job_dir, node) < 0)
        return NULL;
    return p;
}

/* Facts about the job on this node, gathered once. */
struct node_job {
    spank_t sp;
    uint32_t jobid;
    uid_t uid;
    gid_t gid;
    char jobid_s[16];
    const char *node;
    const char *job_file;
    bool user_script;   /* the user gave a script: the plugin runs the preparation itself */
    struct bai_loaded l;
    char *job_dir;
    char *log_dir;
    char err[1024];     /* the first failure, for the marker file */
};

static void fail(struct node_job *nj, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct node_job *nj, const char *fmt, ...)
{
    va_list ap;
    char msg[1024];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    slurm_error("batchai: job %u on %s: %s", nj->jobid, nj->node, msg);
    if (!nj->err[0])
        snprintf(nj->err, sizeof nj->err, "%s", msg);
}

/* mkdir -p with mode 0755 for new directories; succeeds when the path already is a directory. */
static int mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = c;
            if (c == '\0')
                break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Root's part: <job_root>/<jobid>, owned by the user. Two slurmd on one host share it, so the directory
 * appears only once it is the user's: it is made under a private name, handed over, then renamed into place
 * without replacing; an existing one is accepted when it is a real directory the user already owns. */
static int make_job_dir(struct node_job *nj)
{
    char tmp[PATH_MAX];
    struct stat st;
    if (mkdir_p(nj->l.site.job_root) != 0) {
        fail(nj, "cannot create job_root %s: %s", nj->l.site.job_root, strerror(errno));
        return -1;
    }
    if (snprintf(tmp, sizeof tmp, "%s.new-%ld", nj->job_dir, (long)getpid()) >= (int)sizeof tmp) {
        fail(nj, "job directory path too long: %s", nj->job_dir);
        return -1;
    }
    if (mkdir(tmp, 0700) != 0) {
        fail(nj, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    if (chown(tmp, nj->uid, nj->gid) != 0 || chmod(tmp, 0755) != 0) {
        fail(nj, "cannot hand %s to uid %u: %s", tmp, (unsigned)nj->uid, strerror(errno));
        rmdir(tmp);
        return -1;
    }
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, nj->job_dir, RENAME_NOREPLACE) == 0)
        return 0;
    int err = errno;
    rmdir(tmp);
    if (err != EEXIST) {
        fail(nj, "cannot create %s: %s", nj->job_dir, strerror(err));
        return -1;
    }
    if (lstat(nj->job_dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != nj->uid) {
        fail(nj, "%s exists and is not a directory of uid %u", nj->job_dir, (unsigned)nj->uid);
        return -1;
    }
    return 0;
}

/* Exit codes of the user-side child; the parent turns them into messages. */
enum { U_OK = 0, U_MKDIR = 10, U_LINK = 11, U_MOUNT_CMD = 12 };

static bool is_plain_path(const char *v)
{
    return v && v[0] == '/' && !strchr(v, '$');
}

/* Directories a task expects to exist: the mount root, temp dirs, outputs. */
static bool env_is_dir(const char *name)
{
    return strncmp(name, "AZ_BATCHAI_OUTPUT_", 18) == 0 || strcmp(name, "AZ_BATCHAI_JOB_TEMP") == 0 ||
           strcmp(name, "AZ_BATCHAI_SHARED_JOB_TEMP") == 0 ||
           strcmp(name, "AZ_BATCHAI_JOB_MOUNT_ROOT") == 0 || strcmp(name, "AZ_BATCHAI_STDOUTERR_DIR") == 0;
}

/* Runs as the user. Writes the failing path to the status pipe on failure. */
struct user_side {
    struct node_job *nj;
    int status_fd;
};

static int report(const struct user_side *u, int code, const char *what)
{
    char line[PATH_MAX + 64];
    int n = snprintf(line, sizeof line, "%s: %s", what, strerror(errno));
    if (n > 0 && write(u->status_fd, line, (size_t)n) < 0) {
        /* the parent reports the exit code alone */
    }
    return code;
}

static int user_side_fn(void *arg)
{
    const struct user_side *u = arg;
    struct node_job *nj = u->nj;
    const struct bai_plan *plan = &nj->l.plan;

    if (mkdir_p(nj->log_dir) != 0)
        return report(u, U_MKDIR, nj->log_dir);
    for (size_t i = 0; i < plan->n_mounts; i++) {
        const struct bai_plan_mount *m = &plan->mounts[i];
        char *target = bai_expand_jobid(m->target, nj->jobid_s);
        if (!target)
            return report(u, U_MKDIR, "out of memory");
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", target);
        if (mkdir_p(dirname(parent)) != 0)
            return report(u, U_MKDIR, target);
        if (m->site_path) {
            if (symlink(m->site_path, target) != 0) {
                char cur[PATH_MAX];
                ssize_t n = errno == EEXIST ? readlink(target, cur, sizeof cur - 1) : -1;
                if (n < 0 || (cur[n] = '\0', strcmp(cur, m->site_path) != 0))
                    return report(u, U_LINK, target);
            }
        } else if (m->mount_command) {
            /* Only reachable when the admin set allow_mount_command=yes; runs as the user. */
            if (mkdir_p(target) != 0)
                return report(u, U_MKDIR, target);
            pid_t pid = fork();
            if (pid == 0) {
                execl("/bin/sh", "sh", "-c", m->mount_command, (char *)NULL);
                _exit(127);
            }
            int st = 0;
            if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                errno = EIO;
                return report(u, U_MOUNT_CMD, target);
            }
        }
        free(target);
    }
    /* After the mounts: output directories usually live inside one. */
    for (size_t i = 0; i < plan->n_env; i++) {
        if (!env_is_dir(plan->env[i].name) || plan->env[i].secret)
            continue;
        char *v = bai_expand_jobid(plan->env[i].value ? plan->env[i].value : "", nj->jobid_s);
        if (v && is_plain_path(v) && mkdir_p(v) != 0)
            return report(u, U_MKDIR, v);
        free(v);
    }
    return U_OK;
}

static int prepare_as_user(struct node_job *nj)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        fail(nj, "pipe: %s", strerror(errno));
        return -1;
    }
    struct user_side u = {nj, p[1]};
    int code = bai_run_as_user(nj->uid, nj->gid, user_side_fn, &u);
    close(p[1]);
    char why[PATH_MAX + 64] = "";
    ssize_t n = read(p[0], why, sizeof why - 1);
    close(p[0]);
    why[n > 0 ? n : 0] = '\0';
    if (code == U_OK)
        return 0;
    if (code == U_MKDIR)
        fail(nj, "cannot create the directory %s (as uid %u)", why, (unsigned)nj->uid);
    else if (code == U_LINK)
        fail(nj, "cannot create the mount point %s (as uid %u)", why, (unsigned)nj->uid);
    else if (code == U_MOUNT_CMD)
        fail(nj, "the mountCommand for %s failed", why);
    else
        fail(nj, "preparing the node as uid %u failed (status %d)", (unsigned)nj->uid, code);
    return -1;
}

/* --- Preparation for jobs with their own script (the rendered script runs it itself otherwise). --- */

struct prep_child {
    struct node_job *nj;
    char **envp;
    char *out_path, *err_path;
};

static int prep_fn(void *arg)
{
    const struct prep_child *c = arg;
    /* The prolog runs with 0-2 closed: fill them first so that the files below land above 2 and the
     * dup2 calls cannot overwrite one another. */
    for (int fd = open("/dev/null", O_RDWR); fd >= 0 && fd <= 2; fd = open("/dev/null", O_RDWR))
        ;
    int out = open(c->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    int err = open(c->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || err < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        return 126;
    if (chdir(c->nj->job_dir) != 0)
        return 126;
    char *argv[] = {"/bin/sh", "-c", c->nj->l.plan.prep_command, NULL};
    execve("/bin/sh", argv, c->envp);
    return 127;
}

static int add_env(char ***envp, size_t *n, const char *name, const char *value)
{
    char *kv = NULL;
    char **ne = realloc(*envp, (*n + 2) * sizeof **envp);
    if (!ne)
        return -1;
    *envp = ne;
    if (asprintf(&kv, "%s=%s", name, value) < 0)
        return -1;
    ne[(*n)++] = kv;
    ne[*n] = NULL;
    return 0;
}

static void log_execution(struct node_job *nj, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_execution(struct node_job *nj, const char *fmt, ...)
{
    char path[PATH_MAX], stamp[32], msg[512];
    time_t now = time(NULL);
    struct tm tm;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S%z", localtime_r(&now, &tm));
    snprintf(path, sizeof path, "%s/execution-%s.log", nj->log_dir, nj->node);
    /* Root appends to a file in the user's directory: never follow a link there. */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return;
    if (fchown(fd, nj->uid, nj->gid) == 0)
        dprintf(fd, "%s %s: %s\n", stamp, nj->node, msg);
    close(fd);
}

static int run_preparation(struct node_job *nj)
{
    struct prep_child c = {.nj = nj};
    char **envp = NULL;
    size_t n = 0;
    int rc = -1;
    struct passwd *pw = getpwuid(nj->uid);

    if (add_env(&envp, &n, "PATH", "/usr/local/bin:/usr/bin:/bin") != 0 ||
        add_env(&envp, &n, "HOME", pw ? pw->pw_dir : "/") != 0 ||
        add_env(&envp, &n, "USER", pw ? pw->pw_name : "") != 0 ||
        add_env(&envp, &n, "SLURM_JOB_ID", nj->jobid_s) != 0 ||
        add_env(&envp, &n, "SLURMD_NODENAME", nj->node) != 0)
        goto oom;
    for (size_t i = 0; i < nj->l.plan.n_env; i++) {
        const struct bai_plan_env *e = &nj->l.plan.env[i];
        if (!e->value)
            continue;
        char *v = bai_expand_jobid(e->value, nj->jobid_s);
        if (!v || add_env(&envp, &n, e->name, v) != 0) {
            free(v);
            goto oom;
        }
        free(v);
    }
    if (asprintf(&c.out_path, "%s/stdout-job_prep-%s.txt", nj->log_dir, nj->node) < 0 ||
        asprintf(&c.err_path, "%s/stderr-job_prep-%s.txt", nj->log_dir, nj->node) < 0)
        goto oom;
    c.envp = envp;
    log_execution(nj, "job preparation started");
    int code = bai_run_as_user(nj->uid, nj->gid, prep_fn, &c);
    log_execution(nj, "job preparation finished with exit code %d", code);
    if (code != 0)
        fail(nj, "job preparation failed on node %s with exit code %d (see %s)", nj->node, code, c.err_path);
    else
        rc = 0;
    goto out;
oom:
    fail(nj, "out of memory preparing the job");
out:
    for (size_t i = 0; i < n; i++)
        free(envp[i]);
    free(envp);
    free(c.out_path);
    free(c.err_path);
    return rc;
}

static void write_failure(struct node_job *nj)
{
    char *path = bai_prolog_failure_path(nj->job_dir, nj->node);
    if (!path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0) {
        dprintf(fd, "%s\n", nj->err);
        close(fd);
    }
    free(path);
}

/* Common start of prolog and epilog: the job's facts and its plan. Returns 1 when the job does not use
 * the plugin, 0 when loaded, -1 on failure (logged). */
static int load_node_job(spank_t sp, int ac, char **av, struct node_job *nj, char *pathbuf, size_t pathlen)
{
    memset(nj, 0, sizeof *nj);
    nj->sp = sp;
    const char *opt = bai_option_value(sp);
    if (!opt)
        return 1;
    if (spank_get_item(sp, S_JOB_ID, &nj->jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &nj->uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &nj->gid) != ESPANK_SUCCESS) {
        slurm_error("batchai: prolog: cannot get the job's id and user");
        return -1;
    }
    snprintf(nj->jobid_s, sizeof nj->jobid_s, "%u", nj->jobid);
    nj->node = getenv("SLURMD_NODENAME");
    if (!nj->node)
        nj->node = "node";
    /* The prolog sees the allocator's job control variables in its environment with a "SPANK_" prefix.
     * (spank_job_control_getenv() crashes in this context on Slurm 22.05: it dlclose()s a NULL handle.) */
    const char *ctl_file = getenv("SPANK_" BAI_CTL_JOB_FILE);
    const char *ctl_script = getenv("SPANK_" BAI_CTL_SCRIPT);
    if (ctl_file && ctl_file[0] == '/' && strlen(ctl_file) < pathlen)
        nj->job_file = strcpy(pathbuf, ctl_file);
    else if (opt[0] == '/')
        nj->job_file = opt;
    else {
        slurm_error("batchai: job %u: the job file %s is not an absolute path", nj->jobid, opt);
        return -1;
    }
    nj->user_script = ctl_script && strcmp(ctl_script, "generated") != 0;
    if (bai_load(&nj->l, ac, av, nj->job_file, nj->uid, nj->gid, NULL) != 0)
        return -1;
    nj->job_dir = bai_expand_jobid(nj->l.plan.job_dir, nj->jobid_s);
    nj->log_dir = bai_expand_jobid(nj->l.plan.log_dir, nj->jobid_s);
    if (!nj->job_dir || !nj->log_dir) {
        slurm_error("batchai: out of memory");
        return -1;
    }
    return 0;
}

static void free_node_job(struct node_job *nj)
{
    free(nj->job_dir);
    free(nj->log_dir);
    bai_loaded_free(&nj->l);
}

int bai_job_prolog(spank_t sp, int ac, char **av)
{
    struct node_job nj;
    char pathbuf[PATH_MAX];
    int r = load_node_job(sp, ac, av, &nj, pathbuf, sizeof pathbuf);
    if (r == 1)
        return 0;
    if (r == 0 && make_job_dir(&nj) == 0) {
        if (prepare_as_user(&nj) == 0 && nj.user_script && nj.l.plan.prep_command)
            (void)run_preparation(&nj);
        if (nj.err[0])
            write_failure(&nj);
    }
    /* user_init finds a missing job directory or the marker and fails the job with the reason. */
    free_node_job(&nj);
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    if (ftw->level == 0)
        return 0; /* the job directory itself sits in root's job_root: root removes it */
    if (type == FTW_DP)
        return rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
    return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

static int remove_fn(void *arg)
{
    /* FTW_PHYS: mount points are symlinks into site paths; they are removed, never followed. */
    return nftw(arg, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 || errno == ENOENT ? 0 : 1;
}

int bai_job_epilog(spank_t sp, int ac, char **av)
{
    /* Only the site settings are needed: <job_root>/<jobid> is the job directory whatever the job file
     * says, and the file may be gone by now. */
    struct bai_settings site;
    uint32_t jobid;
    uid_t uid;
    gid_t gid;
    char *job_dir = NULL;
    if (!bai_option_value(sp))
        return 0;
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS || bai_site_load(ac, av, &site) != 0)
        return 0;
    if (asprintf(&job_dir, "%s/%u", site.job_root, jobid) > 0) {
        struct stat st;
        /* The directory is the user's, markers root wrote in it included: remove it as the user. */
        if (lstat(job_dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
            (bai_run_as_user(uid, gid, remove_fn, job_dir) != 0 || (rmdir(job_dir) != 0 && errno != ENOENT)))
            slurm_error("batchai: job %u: could not remove %s", jobid, job_dir);
        free(job_dir);
    }
    bai_settings_free(&site);
    return 0;
}
