/* Running code as a job's user, waiting with a deadline, and reading a file as the user (as_user.h). */
#include "as_user.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jobfile/batchai_jobfile.h"
#include "write_all.h"

/* The reader's first fault, as its child passes it up the pipe. */
#define READ_WHY_MAX 512

long long bai_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The user's groups, looked up before fork: everything that may allocate or consult NSS happens there. */
struct user_groups {
    gid_t g[256];
    int n;
};

static void user_groups(uid_t uid, gid_t gid, struct user_groups *ug)
{
    struct passwd pw, *pwp = NULL;
    char buf[4096];
    ug->n = 0;
    if (uid != (uid_t)-1 && getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) == 0 && pwp) {
        ug->n = (int)(sizeof ug->g / sizeof ug->g[0]);
        if (getgrouplist(pwp->pw_name, gid, ug->g, &ug->n) < 0)
            ug->n = 0; /* more than 256 groups: keep only the primary one */
    }
    if (ug->n == 0) {
        ug->g[0] = gid;
        ug->n = 1;
    }
}

/* In a forked child: become uid/gid for good, or _exit(126). Only system calls: nothing allocates between
 * fork and exec or _exit, so a lock another thread of the parent (slurmstepd) held at fork cannot hang it. */
static void child_drop(uid_t uid, gid_t gid, const struct user_groups *ug)
{
    /* slurmstepd may have switched only the effective uid: take root back to drop it for good. */
    if (geteuid() != 0 && getuid() == 0 && seteuid(0) != 0)
        _exit(126);
    if (setgroups((size_t)ug->n, ug->g) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)
        _exit(126);
    /* Belt and braces: a child that can still become root must not run anything. */
    if (uid != 0 && setuid(0) == 0)
        _exit(126);
}

pid_t bai_spawn_as_user(uid_t uid, gid_t gid, int keep_fd, int (*fn)(void *arg), void *arg)
{
    struct user_groups ug;
    bool keep = uid == (uid_t)-1;
    /* The contract: 0-2 become /dev/null below, so a keep_fd among them would be lost. */
    if (keep_fd != -1 && keep_fd < 3) {
        errno = EINVAL;
        return -1;
    }
    user_groups(uid, gid, &ug);

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
    if (keep_fd > 3 && close_range(3, (unsigned)keep_fd - 1, 0) != 0)
        _exit(126);
    if (close_range(keep_fd >= 3 ? (unsigned)keep_fd + 1 : 3, ~0U, 0) != 0)
        _exit(126);
    if (!keep)
        child_drop(uid, gid, &ug);
    /* fn may allocate only where the parent has no other thread: slurmstepd spank prolog|epilog starts none
     * before it calls the plugin (slurmstepd.c, _handle_spank_mode), nor does sbatch's allocator context. From
     * a step's slurmstepd, whose threads could hold malloc's lock at fork, the one fn (spank_task_exit.c's
     * append_note) makes system calls only (SECURITY.md, "Children"). */
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

/* Reads fd into buf (room for max + 2 bytes) while a child writes it, until its end, max + 1 bytes (one
 * byte more than the limit tells an oversized output apart) or the deadline, polling so that a child stuck
 * on a dead file system cannot hold the caller past it (*late is then set). Returns the bytes read. */
static size_t drain_pipe(int fd, char *buf, size_t max, long long deadline_ms, bool *late)
{
    size_t used = 0;
    *late = false;
    while (used <= max) {
        long long left = deadline_ms - bai_now_ms();
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (left <= 0) {
            *late = true;
            break;
        }
        int r = poll(&pfd, 1, (int)(left > 1000 ? 1000 : left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        if (r == 0)
            continue;
        ssize_t n = read(fd, buf + used, max + 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    return used;
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
    char *buf = malloc(BAI_JOB_MAX_BYTES + 2);
    bool late = false;
    if (buf)
        used = drain_pipe(p[0], buf, BAI_JOB_MAX_BYTES, deadline_ms, &late);
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

/* The child of bai_exec_collect_as_user, up to execveat: system calls only (see child_drop). */
static void exec_child(const struct user_groups *ug, const struct bai_exec *x, int in_fd, int out_fd)
{
    (void)setsid();
    /* First out of 0-3, whatever numbers they had (the caller's 0-2 may have been closed, and then the pipe or
     * the memfd took them), so that no dup2 below overwrites one still to be moved. */
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    int in = fcntl(in_fd >= 0 ? in_fd : null_fd, F_DUPFD_CLOEXEC, 10), out = fcntl(out_fd, F_DUPFD_CLOEXEC, 10);
    int exe = fcntl(x->exe_fd, F_DUPFD_CLOEXEC, 10), err = fcntl(null_fd, F_DUPFD_CLOEXEC, 10);
    if (null_fd < 0 || in < 0 || out < 0 || exe < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
        dup2(err, 2) < 0)
        _exit(126);
    /* The program at 3, closed by its exec (FD_CLOEXEC); every other descriptor closed now. */
    if (dup2(exe, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) != 0 || close_range(4, ~0U, 0) != 0)
        _exit(126);
    child_drop(x->uid, x->gid, ug);
    const struct rlimit cpu = {x->cpu_s, x->cpu_s}, as = {x->as_bytes, x->as_bytes}, files = {8, 8}, core = {0, 0};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0 || setrlimit(RLIMIT_CPU, &cpu) != 0 ||
        setrlimit(RLIMIT_AS, &as) != 0 || setrlimit(RLIMIT_NOFILE, &files) != 0 || setrlimit(RLIMIT_CORE, &core) != 0)
        _exit(126);
    execveat(3, "", x->argv, x->envp, AT_EMPTY_PATH);
    _exit(127);
}

int bai_exec_collect_as_user(const struct bai_exec *x, int in_fd, long long deadline_ms, size_t max, char **out,
                             size_t *len, char *why, size_t why_size)
{
    struct user_groups ug;
    int p[2];
    if (x->uid == (uid_t)-1 || x->uid == 0) {
        snprintf(why, why_size, "refusing to run it as uid %d", (int)x->uid);
        return -1;
    }
    user_groups(x->uid, x->gid, &ug);
    char *buf = malloc(max + 2);
    if (!buf || pipe2(p, O_CLOEXEC) != 0) {
        snprintf(why, why_size, "cannot start it: %s", buf ? strerror(errno) : "out of memory");
        free(buf);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0)
        exec_child(&ug, x, in_fd, p[1]);
    int fork_errno = errno;
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        free(buf);
        snprintf(why, why_size, "cannot start it: %s", strerror(fork_errno));
        return -1;
    }
    /* An output over max ends the child at once. */
    bool late = false;
    size_t used = drain_pipe(p[0], buf, max, deadline_ms, &late);
    close(p[0]);
    if (used > max || late) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    int status = 0;
    pid_t r;
    long long wait_by = late || used > max ? bai_now_ms() + 1000 : deadline_ms;
    while ((r = waitpid(pid, &status, WNOHANG)) == 0 && bai_now_ms() < wait_by)
        usleep(2000);
    if (r == 0) { /* still there at the deadline */
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        late = true;
        for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; i++)
            usleep(10000);
    }
    if (late)
        snprintf(why, why_size, "it did not finish in time");
    else if (used > max)
        snprintf(why, why_size, "it wrote more than %zu bytes", max);
    else if (r < 0)
        snprintf(why, why_size, "cannot wait for it: %s", strerror(errno));
    else if (WIFSIGNALED(status))
        snprintf(why, why_size, "it was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WEXITSTATUS(status) == 1 && used > 0) {
        buf[used] = '\0';
        snprintf(why, why_size, "%s", buf);
        /* the reason is the parser's own message: returned as 1 */
        free(buf);
        return 1;
    } else if (WEXITSTATUS(status) != 0)
        snprintf(why, why_size, "it exited with status %d%s", WEXITSTATUS(status),
                 WEXITSTATUS(status) == 126 ? " (it could not become the user or be confined)"
                 : WEXITSTATUS(status) == 127 ? " (it could not be run)" : "");
    else {
        buf[used] = '\0';
        *out = buf;
        *len = used;
        return 0;
    }
    free(buf);
    return -1;
}
