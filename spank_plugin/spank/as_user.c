/* Running code as a job's user, waiting with a deadline, and reading a file as the user (as_user.h). */
#include "as_user.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "write_all.h"

/* The reader's first fault, as its child passes it up the pipe. */
#define READ_WHY_MAX 512

long long bai_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

pid_t bai_spawn_as_user(uid_t uid, gid_t gid, int keep_fd, int (*fn)(void *arg), void *arg)
{
    /* NSS (the user's name and groups) is consulted before fork: in the child of a threaded process (slurmd,
     * slurmstepd) it could wait for good on a lock another thread held at fork, or load a module. fn runs
     * in the child and allocates: glibc's fork holds malloc's locks across itself, so malloc works there. */
    gid_t groups[256];
    int ngroups = 0;
    struct passwd pw, *pwp = NULL;
    char buf[4096];
    bool keep = uid == (uid_t)-1;
    if (!keep && getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) == 0 && pwp) {
        ngroups = (int)(sizeof groups / sizeof groups[0]);
        if (getgrouplist(pwp->pw_name, gid, groups, &ngroups) < 0)
            ngroups = 0; /* more than 256 groups: keep only the primary one */
    }
    if (ngroups == 0) {
        groups[0] = gid;
        ngroups = 1;
    }

    pid_t pid = fork();
    if (pid != 0)
        return pid; /* the child's pid, or -1 with fork's errno */
    /* A session of its own, so that a deadline kills everything it started; no fd of root's but keep_fd.
     * 0-2 too go to /dev/null: from 23.11, slurmd runs the SPANK prolog and epilog through run_command, whose
     * child's stdout and stderr are a pipe that slurmd reads until EOF, so a child killed at its deadline but
     * stuck in the kernel (a FUSE read that never answers) would hold the pipe, and slurmd with it, for as
     * long as it stays stuck (see SECURITY.md). */
    (void)setsid();
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 || dup2(null_fd, 2) < 0)
        _exit(126);
    if (keep_fd > 3)
        close_range(3, (unsigned)keep_fd - 1, 0);
    close_range(keep_fd >= 3 ? (unsigned)keep_fd + 1 : 3, ~0U, 0);
    if (keep)
        _exit(fn(arg) & 0xff);
    /* slurmstepd may have switched only the effective uid: take root back to drop it for good. */
    if (geteuid() != 0 && getuid() == 0 && seteuid(0) != 0)
        _exit(126);
    if (setgroups((size_t)ngroups, groups) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)
        _exit(126);
    /* Belt and braces: a child that can still become root must not run anything. */
    if (uid != 0 && setuid(0) == 0)
        _exit(126);
    _exit(fn(arg) & 0xff);
}

int bai_wait_child(pid_t pid, long long deadline_ms)
{
    int status;
    long nap_us = 200;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (r < 0 && errno != EINTR)
            return -1;
        if (bai_now_ms() >= deadline_ms)
            break;
        usleep((useconds_t)nap_us);
        nap_us = nap_us < 20000 ? nap_us * 2 : nap_us;
    }
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    /* A process blocked in the kernel (a dead NFS server) may not die at once: never wait for it long. */
    for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; i++)
        usleep(10000);
    return -2;
}

int bai_run_as_user(uid_t uid, gid_t gid, int keep_fd, long long deadline_ms, int (*fn)(void *arg), void *arg)
{
    pid_t pid = bai_spawn_as_user(uid, gid, keep_fd, fn, arg);
    return pid < 0 ? -1 : bai_wait_child(pid, deadline_ms);
}

/* What the child of bai_collect_as_user runs: fn with the pipe's write end. */
struct collect_ctx {
    int (*fn)(int fd, void *arg);
    void *arg;
    int fd_out;
};

static int collect_child(void *arg)
{
    const struct collect_ctx *c = arg;
    return c->fn(c->fd_out, c->arg);
}

int bai_collect_as_user(uid_t uid, gid_t gid, long long deadline_ms, int (*fn)(int fd, void *arg), void *arg,
                        char **out, size_t *len, struct bai_diag *diag)
{
    int p[2];
    size_t used = 0;
    long long start_ms = bai_now_ms();

    if (pipe2(p, O_CLOEXEC) != 0) {
        bai_diag_add(diag, NULL, "pipe: %s", strerror(errno));
        return -1;
    }
    struct collect_ctx c = {fn, arg, p[1]};
    pid_t pid = bai_spawn_as_user(uid, gid, p[1], collect_child, &c);
    int fork_errno = errno;
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        bai_diag_add(diag, NULL, "cannot start a process to read it: %s", strerror(fork_errno));
        return -1;
    }
    /* Drain the pipe while the child writes, polling so that a child stuck on a dead file system cannot
     * hold the caller past the deadline. One byte more than the limit tells an oversized output apart. */
    char *buf = malloc(BAI_JOB_MAX_BYTES + 2);
    bool late = false;
    while (buf && used <= BAI_JOB_MAX_BYTES) {
        long long left = deadline_ms - bai_now_ms();
        struct pollfd pfd = {.fd = p[0], .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) < 0) {
            if (left > 0 && errno == EINTR)
                continue;
            late = left <= 0;
            break;
        }
        if (!pfd.revents)
            continue;
        ssize_t n = read(p[0], buf + used, BAI_JOB_MAX_BYTES + 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    close(p[0]);
    int code = bai_wait_child(pid, late ? 0 : deadline_ms);
    if (!buf)
        bai_diag_add(diag, NULL, "out of memory");
    else if (late || code == -2)
        bai_diag_add(diag, NULL, "reading it took longer than %lld s (a file system that does not answer?)",
                     (deadline_ms - start_ms + 999) / 1000);
    else if (code == 1) {
        buf[used] = '\0';
        bai_diag_add(diag, NULL, "%s", buf);
    } else if (code != 0 || used > BAI_JOB_MAX_BYTES)
        bai_diag_add(diag, NULL, "cannot read it (status %d)", code);
    else {
        buf[used] = '\0';
        *out = buf;
        *len = used;
        return 0;
    }
    free(buf);
    return -1;
}

static void first_message(void *arg, const char *msg)
{
    char *why = arg;
    if (!why[0])
        snprintf(why, READ_WHY_MAX, "%s", msg);
}

/* The reader's child: the content, or (status 1) the reader's first fault. */
static int read_child(int fd, void *arg)
{
    const char *path = arg;
    struct bai_diag diag = {0};
    char *text = NULL;
    size_t len = 0;
    if (bai_job_read(path, &text, &len, &diag) == 0)
        return bai_write_all(fd, text, len) == 0 ? 0 : 2;
    char why[READ_WHY_MAX] = "";
    bai_diag_each(&diag, first_message, why);
    return bai_write_all(fd, why, strlen(why)) == 0 ? 1 : 2;
}

int bai_read_as_user(const char *path, uid_t uid, gid_t gid, long long deadline_ms, char **text, size_t *len,
                     struct bai_diag *diag)
{
    return bai_collect_as_user(uid, gid, deadline_ms, read_child, (void *)path, text, len, diag);
}
