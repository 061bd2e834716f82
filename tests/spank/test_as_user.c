/* Running as the user and waiting (node/as_user.c) under ASan and UBSan, without Slurm or a cluster, with
 * real processes: the child's identity, groups, fds and session; a deadline that kills the child's whole
 * session; the exit status; reading a job file as the user against the shapes a user can leave in its
 * place (a file only root may read, a FIFO, a directory, a symbolic link, an oversized file) and a reader
 * that never returns. Runs as root (it becomes another uid). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node/as_user.h"
#include "jobfile/batchai_jobfile.h"

#include "../check.h"

#define USER_UID 65534 /* nobody */
#define USER_GID 65534

static char base[64]; /* this test's directory, /tmp/bai-as-user-XXXXXX, 0755: the current one */

static int open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

/* What the child sees of itself, written to the kept fd. */
struct report {
    uid_t r_uid, e_uid, s_uid;
    gid_t r_gid, e_gid, s_gid;
    int ngroups;
    gid_t groups[64];
    bool own_session;
    bool null_012;   /* 0, 1 and 2 are /dev/null, open for reading and writing */
    int other_fds;   /* open fds but 0-2 and the kept one */
};

static int report_child(void *arg)
{
    int fd = *(int *)arg;
    struct report r = {0};
    getresuid(&r.r_uid, &r.e_uid, &r.s_uid);
    getresgid(&r.r_gid, &r.e_gid, &r.s_gid);
    r.ngroups = getgroups(64, r.groups);
    r.own_session = getsid(0) == getpid();
    struct stat null_st, st;
    r.null_012 = stat("/dev/null", &null_st) == 0;
    for (int i = 0; i < 3; i++)
        r.null_012 = r.null_012 && fstat(i, &st) == 0 && st.st_rdev == null_st.st_rdev && S_ISCHR(st.st_mode) &&
                     (fcntl(i, F_GETFL) & O_ACCMODE) == O_RDWR;
    for (int i = 3; i < 1024; i++)
        r.other_fds += i != fd && fcntl(i, F_GETFD) != -1;
    return write(fd, &r, sizeof r) == (ssize_t)sizeof r ? 0 : 3;
}

static int cmp_gid(const void *a, const void *b)
{
    gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
    return (x > y) - (x < y);
}

/* Spawn report_child as uid/gid with fds the child must not get: one below the kept fd, one above, both
 * inheritable. */
static bool spawn_report(uid_t uid, gid_t gid, struct report *r)
{
    int leak_low = open("/dev/null", O_RDONLY);
    int p[2];
    if (pipe(p) != 0)
        return false;
    int leak_high = open("/dev/null", O_RDONLY);
    int status = bai_run_as_user(uid, gid, p[1], bai_now_ms() + 10000, report_child, &p[1]);
    close(p[1]);
    bool ok = status == 0 && read(p[0], r, sizeof *r) == (ssize_t)sizeof *r;
    close(p[0]);
    close(leak_low);
    close(leak_high);
    return ok && leak_low >= 3 && leak_high > p[1];
}

/* The child is fully uid/gid with exactly the user's groups, whatever root's were. */
static void test_identity(const char *name)
{
    struct passwd *pw = getpwnam(name);
    if (!pw) {
        check_note("test_as_user: no user %s here, its identity is not checked", name);
        return;
    }
    uid_t uid = pw->pw_uid;
    gid_t gid = pw->pw_gid;
    gid_t want[64];
    int nwant = 64;
    CHECK(getgrouplist(name, gid, want, &nwant) > 0);
    struct report r;
    gid_t root_groups[] = {0, 4, 27};
    CHECK(setgroups(3, root_groups) == 0); /* groups of root's that must not reach the child */
    CHECK(spawn_report(uid, gid, &r));
    CHECK(r.r_uid == uid && r.e_uid == uid && r.s_uid == uid);
    CHECK(r.r_gid == gid && r.e_gid == gid && r.s_gid == gid);
    qsort(want, (size_t)nwant, sizeof want[0], cmp_gid);
    qsort(r.groups, (size_t)(r.ngroups > 0 ? r.ngroups : 0), sizeof r.groups[0], cmp_gid);
    CHECK(r.ngroups == nwant && memcmp(r.groups, want, (size_t)nwant * sizeof want[0]) == 0);
    CHECK(r.own_session);
    CHECK(r.null_012);
    CHECK(r.other_fds == 0);
    check_note("test_as_user: %s: uid %u gid %u, %d groups", name, (unsigned)uid, (unsigned)gid, r.ngroups);
}

/* The first user but root in more than one group, or NULL. */
static const char *user_with_groups(void)
{
    static char name[256];
    const char *found = NULL;
    struct passwd *pw;
    setpwent();
    while (!found && (pw = getpwent())) {
        gid_t groups[64];
        int n = 64;
        if (pw->pw_uid != 0 && getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) > 1) {
            snprintf(name, sizeof name, "%s", pw->pw_name);
            found = name;
        }
    }
    endpwent();
    return found;
}

/* uid (uid_t)-1 keeps the caller's identity, still in a session of its own with no fd of the caller's. */
static void test_keep_identity(void)
{
    struct report r;
    CHECK(spawn_report((uid_t)-1, (gid_t)-1, &r));
    CHECK(r.r_uid == 0 && r.e_uid == 0);
    CHECK(r.own_session && r.null_012 && r.other_fds == 0);
}

static int exit_with(void *arg)
{
    return *(int *)arg;
}

static int die_by_signal(void *arg)
{
    (void)arg;
    raise(SIGKILL);
    return 0;
}

static void test_exit_status(void)
{
    int codes[] = {0, 1, 7, 255};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        CHECK(bai_run_as_user(USER_UID, USER_GID, -1, bai_now_ms() + 10000, exit_with, &codes[i]) == codes[i]);
    CHECK(bai_run_as_user(USER_UID, USER_GID, -1, bai_now_ms() + 10000, die_by_signal, NULL) == -1);
}

/* A child that starts a sleeper and sleeps itself: the deadline kills both. */
static int fork_and_sleep(void *arg)
{
    int fd = *(int *)arg;
    pid_t kid = fork();
    if (kid == 0) {
        sleep(60);
        _exit(0);
    }
    if (kid < 0 || write(fd, &kid, sizeof kid) != (ssize_t)sizeof kid)
        return 3;
    sleep(60);
    return 0;
}

/* Wait up to 5 s for `pid` (our child, or an orphan of ours: this process is a subreaper). */
static bool reaped_killed(pid_t pid)
{
    int status;
    for (int i = 0; i < 500; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        if (r < 0)
            return false;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    return false;
}

static void test_deadline(void)
{
    int p[2];
    CHECK(pipe(p) == 0);
    long long start = bai_now_ms();
    pid_t pid = bai_spawn_as_user(USER_UID, USER_GID, p[1], fork_and_sleep, &p[1]);
    close(p[1]);
    pid_t kid = -1;
    CHECK(pid > 0 && read(p[0], &kid, sizeof kid) == (ssize_t)sizeof kid && kid > 0);
    close(p[0]);
    CHECK(bai_wait_child(pid, start + 300) == -2);
    long long took = bai_now_ms() - start;
    CHECK(took < 5000); /* the sleeps are 60 s: not a timing, the difference between killed and waited for */
    CHECK(kill(pid, 0) == -1 && errno == ESRCH); /* reaped by bai_wait_child */
    CHECK(kid > 0 && reaped_killed(kid));        /* the grandchild, in the same session, killed too */
}

static void write_file(const char *path, const char *text, size_t len, mode_t mode)
{
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode);
    CHECK(fd >= 0 && write(fd, text, len) == (ssize_t)len);
    if (fd >= 0)
        close(fd);
    CHECK(chmod(path, mode) == 0);
}

/* Read `path` as the user; on failure *why holds the fault. */
static int read_as(uid_t uid, const char *path, char **text, size_t *len, char *why, size_t why_size)
{
    struct bai_diag diag = {0};
    *text = NULL;
    *len = 0;
    int rc = bai_read_as_user(path, uid, uid == (uid_t)-1 ? (gid_t)-1 : USER_GID, bai_now_ms() + 3000, text, len,
                              &diag);
    why[0] = '\0';
    if (diag.count > 0)
        snprintf(why, why_size, "%s", diag.msg[0]);
    CHECK((rc == 0) == (diag.count == 0) && bai_diag_total(&diag) <= 1);
    bai_diag_free(&diag);
    return rc;
}

/* As bai_read_as_user reads: refused with a reason containing `want`, nothing returned. */
static void check_refused(uid_t uid, const char *path, const char *want)
{
    char *text, why[600];
    size_t len;
    CHECK(read_as(uid, path, &text, &len, why, sizeof why) == -1 && text == NULL && strstr(why, want));
    if (!strstr(why, want))
        fprintf(stderr, "  %s: got \"%s\", wanted \"%s\"\n", path, why, want);
    free(text);
}

static void check_read(uid_t uid, const char *path, const char *want, size_t want_len)
{
    char *text, why[600];
    size_t len;
    CHECK(read_as(uid, path, &text, &len, why, sizeof why) == 0 && text && len == want_len &&
          memcmp(text, want, want_len) == 0 && text[len] == '\0');
    free(text);
}

static void test_read(void)
{
    int fds_before = open_fds();
    /* Larger than a pipe's buffer, so the parent must drain while the child writes; every byte value. */
    size_t big_len = 200 * 1024;
    char *big = malloc(BAI_JOB_MAX_BYTES + 1);
    for (size_t i = 0; i < BAI_JOB_MAX_BYTES + 1; i++)
        big[i] = (char)(i * 7 + i / 251);
    write_file("job.json", big, big_len, 0644);
    check_read(USER_UID, "job.json", big, big_len);
    write_file("max.json", big, BAI_JOB_MAX_BYTES, 0644);
    check_read(USER_UID, "max.json", big, BAI_JOB_MAX_BYTES);
    write_file("over.json", big, BAI_JOB_MAX_BYTES + 1, 0644);
    check_refused(USER_UID, "over.json", "larger than the limit");
    write_file("empty.json", "", 0, 0644);
    check_read(USER_UID, "empty.json", "", 0);
    /* Only root may read it: the user is refused by the kernel, root's own reader (uid -1) is not. */
    write_file("secret.json", "{\"secret\": 1}", 13, 0600);
    check_refused(USER_UID, "secret.json", "Permission denied");
    check_read((uid_t)-1, "secret.json", "{\"secret\": 1}", 13);
    /* A FIFO nobody writes to: refused at once, not waited on until the deadline. */
    CHECK(mkfifo("fifo", 0666) == 0 && chmod("fifo", 0666) == 0);
    check_refused(USER_UID, "fifo", "is not a regular file");
    CHECK(mkdir("dir", 0755) == 0);
    check_refused(USER_UID, "dir", "is not a regular file");
    check_refused(USER_UID, "absent.json", "No such file");
    /* A symbolic link is followed as the user, so it reaches no more than the user could. */
    CHECK(symlink("secret.json", "to-secret") == 0);
    check_refused(USER_UID, "to-secret", "Permission denied");
    CHECK(symlink("fifo", "to-fifo") == 0);
    check_refused(USER_UID, "to-fifo", "is not a regular file");
    CHECK(symlink("job.json", "to-job") == 0);
    check_read(USER_UID, "to-job", big, big_len);
    free(big);
    CHECK(open_fds() == fds_before); /* no pipe end left behind */
}

static int sleep_forever(int fd, void *arg)
{
    (void)fd;
    (void)arg;
    sleep(600);
    return 0;
}

static int say_why(int fd, void *arg)
{
    const char *why = arg;
    return write(fd, why, strlen(why)) == (ssize_t)strlen(why) ? 1 : 2;
}

static int write_too_much(int fd, void *arg)
{
    (void)arg;
    static char chunk[65536];
    for (size_t done = 0; done <= BAI_JOB_MAX_BYTES; done += sizeof chunk)
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
            return 2;
    return 0;
}

static void test_collect(void)
{
    struct bai_diag diag = {0};
    char *out = NULL;
    size_t len = 0;
    /* A reader that never returns (a file system that does not answer) is killed at the deadline. */
    long long start = bai_now_ms();
    CHECK(bai_collect_as_user(USER_UID, USER_GID, start + 300, sleep_forever, NULL, &out, &len, &diag) == -1);
    CHECK(bai_now_ms() - start < 5000 && out == NULL); /* not a timing: the reader sleeps for ever */
    CHECK(diag.count == 1 && strstr(diag.msg[0], "took longer than 1 s"));
    bai_diag_free(&diag);
    /* Status 1: what it wrote is the reason. */
    CHECK(bai_collect_as_user(USER_UID, USER_GID, bai_now_ms() + 10000, say_why, "it is broken", &out, &len, &diag) ==
          -1);
    CHECK(diag.count == 1 && strcmp(diag.msg[0], "it is broken") == 0);
    bai_diag_free(&diag);
    /* More than the limit, even with status 0. */
    CHECK(bai_collect_as_user(USER_UID, USER_GID, bai_now_ms() + 10000, write_too_much, NULL, &out, &len, &diag) ==
          -1);
    CHECK(diag.count == 1 && strstr(diag.msg[0], "cannot read it"));
    bai_diag_free(&diag);
}

int main(void)
{
    if (geteuid() != 0) {
        return check_skip("root", "becomes uid %d and other users to check the child's identity", USER_UID);
    }
    /* Orphans of the children come to this process, so the test can see how they ended. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        fprintf(stderr, "prctl(PR_SET_CHILD_SUBREAPER): %s\n", strerror(errno));
        return 1;
    }
    snprintf(base, sizeof base, "/tmp/bai-as-user-XXXXXX");
    if (!mkdtemp(base) || chmod(base, 0755) != 0 || chdir(base) != 0) {
        fprintf(stderr, "cannot make a directory under /tmp: %s\n", strerror(errno));
        return 1;
    }
    test_identity("nobody");
    /* A user with supplementary groups, where the machine has one (Debian's postgres is in ssl-cert). */
    const char *grouped = user_with_groups();
    if (grouped)
        test_identity(grouped);
    else
        check_note("test_as_user: no user here has supplementary groups; only nobody's single group is checked");
    test_keep_identity();
    test_exit_status();
    test_deadline();
    test_read();
    test_collect();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", base);
    if (chdir("/") != 0 || system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", base);
    return check_exit("as_user");
}
