/* The user's side of the prolog and epilog: see spank_user.h. Everything here runs in a child that has
 * fully become the job's user (bai_run_as_user), so every path is resolved, and every permission checked,
 * with the user's rights: a link the user planted leads only where the user could go anyway. */
#include "spank_user.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "make_dirs.h"
#include "node/rootfs.h"
#include "jobfile/batchai_jobfile.h"
#include "strbuf.h"

/* Write "<what>: <strerror>" to the status pipe; return 1, the child's failure status. */
static int report(const struct bai_user_setup *u, const char *what)
{
    char line[PATH_MAX + 64];
    int n = snprintf(line, sizeof line, "%s: %s", what, strerror(errno));
    if (n > 0 && write(u->status_fd, line, (size_t)n) < 0) {
        /* the parent reports the exit status alone */
    }
    return 1;
}

/* A share the user mapped to a directory of their own (--batchai-share) must be one they can read, now, on
 * this node: checked here, as the user, so a link swapped since submission to a place only root reads, or a
 * FIFO, fails the job with the cause instead of leaving a dead link in its mounts. O_NONBLOCK: a FIFO never
 * blocks; O_DIRECTORY: nothing else opens. */
static int user_dir_check(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* Directories a task expects to exist: the mount root, temp dirs, outputs. */
static bool env_is_dir(const char *name)
{
    return strncmp(name, "AZ_BATCHAI_OUTPUT_", 18) == 0 || strcmp(name, "AZ_BATCHAI_JOB_TEMP") == 0 ||
           strcmp(name, "AZ_BATCHAI_SHARED_JOB_TEMP") == 0 ||
           strcmp(name, "AZ_BATCHAI_JOB_MOUNT_ROOT") == 0 || strcmp(name, "AZ_BATCHAI_STDOUTERR_DIR") == 0;
}

/* <job_dir>/secrets.env, 0600: one `export NAME='value'` line per secret, for the steps that source it. Made
 * under a private name and renamed into place, so a reader never sees half of it. */
static int write_secrets(const struct bai_user_setup *u, const char *path)
{
    const struct bai_plan *plan = u->plan;
    struct sbuf b = {0};
    char tmp[PATH_MAX];
    for (size_t i = 0; i < plan->n_env; i++) {
        if (!plan->env[i].secret || !plan->env[i].value)
            continue;
        sb_printf(&b, "export %s=", plan->env[i].name);
        sb_shell_quote(&b, plan->env[i].value);
        sb_puts(&b, "\n");
    }
    char *text = sb_finish(&b);
    snprintf(tmp, sizeof tmp, "%s.%s.tmp", path, u->node);
    (void)unlink(tmp);
    int fd = text ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600) : -1;
    bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    if (text) {
        explicit_bzero(text, strlen(text));
        free(text);
    }
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        (void)unlink(tmp);
        errno = err;
        return report(u, path);
    }
    return 0;
}

int bai_user_setup(void *arg)
{
    const struct bai_user_setup *u = arg;
    const struct bai_plan *plan = u->plan;
    int rc = 0;

    /* The log directory first, and even when the rest cannot be done: the batch step's output goes there,
     * and with it the reason the job fails. */
    if (u->log_dir && bai_make_dirs(u->log_dir, 0755) != 0)
        return report(u, u->log_dir);
    if (!plan)
        return 0;
    for (size_t i = 0; i < plan->n_mounts && rc == 0; i++) {
        const struct bai_plan_mount *m = &plan->mounts[i];
        char *target = bai_expand_jobid(m->target, u->jobid);
        char parent[PATH_MAX];
        if (!target)
            return report(u, "out of memory");
        snprintf(parent, sizeof parent, "%s", target);
        if (bai_make_dirs(dirname(parent), 0755) != 0)
            rc = report(u, target);
        else if (m->user_dir && user_dir_check(m->site_path) != 0) {
            char what[PATH_MAX + 64];
            snprintf(what, sizeof what, "cannot read %s, share \"%s\" of your own (--batchai-share)", m->site_path,
                     m->share);
            rc = report(u, what);
        }
        else if (m->site_path && symlink(m->site_path, target) != 0) {
            char cur[PATH_MAX];
            ssize_t n = errno == EEXIST ? readlink(target, cur, sizeof cur - 1) : -1;
            if (n < 0 || (cur[n] = '\0', strcmp(cur, m->site_path) != 0))
                rc = report(u, target);
        } else if (!m->site_path && bai_make_dirs(target, 0755) != 0) { /* an unmanaged file system's mount point */
            rc = report(u, target);
        }
        free(target);
    }
    /* After the mounts: output directories usually live inside one. */
    for (size_t i = 0; i < plan->n_env && rc == 0; i++) {
        if (!env_is_dir(plan->env[i].name) || plan->env[i].secret)
            continue;
        char *j = bai_expand_jobid(plan->env[i].value ? plan->env[i].value : "", u->jobid);
        char *v = j ? bai_expand_node(j, u->node) : NULL;
        if (v && v[0] == '/' && !strchr(v, '$') && bai_make_dirs(v, 0755) != 0)
            rc = report(u, v);
        free(j);
        free(v);
    }
    if (rc == 0 && plan->secrets_file) {
        char *path = bai_expand_jobid(plan->secrets_file, u->jobid);
        rc = path ? write_secrets(u, path) : report(u, "out of memory");
        free(path);
    }
    return rc;
}

int bai_user_remove_dir(void *arg)
{
    const char *job_dir = arg;
    /* The job may have left its directory mode 000: it is the user's, so the user opens it up. (Root checked
     * that job_root's entry is a real directory of the user's, and only root can replace it.) */
    if (fchmodat(AT_FDCWD, job_dir, 0700, AT_SYMLINK_NOFOLLOW) != 0) {
        /* gone already, or the open below says why */
    }
    int fd = open(job_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : 1; /* another slurmd on this host removed it first */
    return bai_remove_contents(fd) == 0 ? 0 : 1;
}
