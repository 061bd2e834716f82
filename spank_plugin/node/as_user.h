/* Running code as a job's user, and waiting for it with a deadline: the privileged core of the plugin that
 * needs no Slurm (tests/spank/test_as_user.c runs it under ASan and UBSan without a cluster).
 *
 * Root never touches a user's places itself (SECURITY.md): it forks a child that has fully become the user
 * and lets the kernel check every permission. A child can be stuck for ever (a file system that does not
 * answer), so nothing here waits without a deadline, and a deadline kills the child's whole session.
 *
 * Nothing here logs: functions return a code (and, for reading, faults in a bai_diag); the callers log. */
#ifndef BAI_AS_USER_H
#define BAI_AS_USER_H

#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "jobfile/batchai_jobfile.h"

/* Milliseconds on the monotonic clock, for deadlines. */
long long bai_now_ms(void);

/* Start fn(arg) in a child that has fully dropped to uid/gid (setgroups with the user's groups, setresgid,
 * setresuid; checked; uid (uid_t)-1 keeps the caller's identity), in a session of its own, with 0-2 on
 * /dev/null and every other file descriptor but keep_fd (-1: none, else >= 3) closed, so no fd of root's or
 * slurmd's leaks to it or stays held by it. fn's return value (& 0xff) is the child's exit status; the child
 * exits 126 without running fn when it could not become the user. Returns the pid, or -1 with errno set
 * when fork failed. */
pid_t bai_spawn_as_user(uid_t uid, gid_t gid, int keep_fd, int (*fn)(void *arg), void *arg);

/* Wait for child `pid` until deadline_ms. Returns its exit status (0-255); -1 when it was killed by a
 * signal or could not be waited for; -2 when the deadline passed: the child's whole session was then
 * killed (SIGKILL) and is reaped if it goes within a second. */
int bai_wait_child(pid_t pid, long long deadline_ms);

/* bai_spawn_as_user + bai_wait_child: fn's status, -1 (fork failed, or a signal), or -2 (deadline). */
int bai_run_as_user(uid_t uid, gid_t gid, int keep_fd, long long deadline_ms, int (*fn)(void *arg), void *arg);

/* Run fn(fd, arg) as bai_spawn_as_user does, with fd the write end of a pipe, and collect what it writes
 * while it runs (the parent drains the pipe: a pipe holds 64 KiB). fn returns 0 when what it wrote is the
 * output, 1 when it is the reason it failed. On 0, *out is a new NUL-terminated buffer of *len bytes (at
 * most BAI_JOB_MAX_BYTES). Otherwise returns -1 with one fault in `diag`: fn's reason, more output than
 * BAI_JOB_MAX_BYTES, another exit status, or the deadline (the child's session is then killed; no wait
 * outlives deadline_ms by more than a second). */
int bai_collect_as_user(uid_t uid, gid_t gid, long long deadline_ms, int (*fn)(int fd, void *arg), void *arg,
                        char **out, size_t *len, struct bai_diag *diag);

/* A program to run confined, as a user, by bai_exec_collect_as_user. */
struct bai_exec {
    int exe_fd;              /* the program, opened by the caller on a file only root can replace */
    char *const *argv, *const *envp;
    uid_t uid;               /* never 0 or (uid_t)-1 */
    gid_t gid;
    rlim_t cpu_s, as_bytes;  /* RLIMIT_CPU, RLIMIT_AS; RLIMIT_NOFILE is 8, RLIMIT_CORE 0 */
};

/* Run x->argv from x->exe_fd in a child (a session of its own) that has fully dropped to x->uid (as
 * bai_spawn_as_user), set PR_SET_NO_NEW_PRIVS and the limits, with in_fd (-1: /dev/null) as stdin, a pipe as
 * stdout, /dev/null as stderr and no other descriptor, and collect its stdout, at most `max` bytes. Between
 * fork and exec the child makes system calls only, so the caller may have threads. Returns 0 with *out (a
 * new NUL-terminated buffer of *len bytes) when it exited 0; 1 with its output in why when it exited 1 (the
 * program's own reason); -1 with why otherwise: killed by a signal, more than max bytes (it is killed at
 * once), past deadline_ms (its session is killed), another status. */
int bai_exec_collect_as_user(const struct bai_exec *x, int in_fd, long long deadline_ms, size_t max, char **out,
                             size_t *len, char *why, size_t why_size);

/* Read the file at `path` as uid/gid (bai_job_read in the child: O_NONBLOCK, regular files only, at most
 * BAI_JOB_MAX_BYTES) into a new NUL-terminated buffer, by deadline_ms. Returns 0, or -1 with the reason
 * in `diag` (the reader's own, e.g. "cannot open: Permission denied"). */
int bai_read_as_user(const char *path, uid_t uid, gid_t gid, long long deadline_ms, char **text, size_t *len,
                     struct bai_diag *diag);

#endif
