/* Root's file-system work (node/rootfs.c) under ASan and UBSan, without Slurm or a cluster: the hostile
 * shapes a user can leave where root works (a symbolic link, a group-writable or user-owned component, a
 * FIFO, a pre-made directory, a tree deeper than any bound with mode-000 directories) against each call.
 * Runs as root (it hands directories to another uid); the removal runs as that uid, as in the epilog. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node/rootfs.h"

#include "../check.h"

#define USER_UID 65534
#define USER_GID 65534

static char base[64]; /* a trusted directory of this test's: /var/lib/bai-rootfs-XXXXXX */

static char *at(const char *rel)
{
    static char buf[8][4096];
    static int i;
    char *p = buf[i++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", base, rel);
    return p;
}

static void test_trusted_dir_open(void)
{
    char why[BAI_WHY_MAX];
    int fd = bai_trusted_dir_open(base, false, why);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    /* Missing components are made, root's and 0755 whatever the umask. */
    mode_t old = umask(0077);
    fd = bai_trusted_dir_open(at("made/deeper"), true, why);
    umask(old);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0755);
    if (fd >= 0)
        close(fd);
    CHECK(bai_trusted_dir_open(at("absent"), false, why) == -1);
    CHECK(bai_trusted_dir_open("relative/path", true, why) == -1 && strstr(why, "not an absolute path"));
    CHECK(bai_trusted_dir_open(at("made/../made"), false, why) == -1 && strstr(why, "\"..\""));
    /* A symbolic link as a component, even to a trusted directory, is never followed. */
    CHECK(symlink(at("made"), at("link")) == 0);
    CHECK(bai_trusted_dir_open(at("link/deeper"), false, why) == -1 && strstr(why, "symbolic link"));
    CHECK(bai_trusted_dir_open(at("link/new"), true, why) == -1 && access(at("made/new"), F_OK) != 0);
    /* A component others could write or that a user owns: refused, and nothing is made below it. */
    CHECK(mkdir(at("gw"), 0775) == 0 && chmod(at("gw"), 0775) == 0);
    CHECK(bai_trusted_dir_open(at("gw/x"), true, why) == -1 && strstr(why, "writable by group"));
    CHECK(access(at("gw/x"), F_OK) != 0);
    CHECK(mkdir(at("users"), 0755) == 0 && chown(at("users"), USER_UID, USER_GID) == 0);
    CHECK(bai_trusted_dir_open(at("users"), false, why) == -1 && strstr(why, "owned by uid"));
    /* A file where a directory should be. */
    int f = open(at("file"), O_CREAT | O_WRONLY, 0644);
    CHECK(f >= 0);
    close(f);
    CHECK(bai_trusted_dir_open(at("file"), true, why) == -1);
}

static void test_job_dir(int root_fd)
{
    char why[BAI_WHY_MAX];
    struct stat st;
    CHECK(bai_job_dir_create(root_fd, "42", USER_UID, USER_GID, why) == 0);
    CHECK(fstatat(root_fd, "42", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && st.st_uid == USER_UID &&
          (st.st_mode & 07777) == 0700);
    /* Made again (a second slurmd on the host): accepted as it is the user's. */
    CHECK(bai_job_dir_create(root_fd, "42", USER_UID, USER_GID, why) == 0);
    CHECK(bai_job_dir_check(root_fd, "42", USER_UID, why) == 0);
    CHECK(bai_job_dir_check(root_fd, "42", 0, why) == -1);
    /* Someone else's directory, or a symbolic link to one, under the name: refused, left alone. */
    CHECK(mkdirat(root_fd, "43", 0700) == 0);
    CHECK(bai_job_dir_create(root_fd, "43", USER_UID, USER_GID, why) == -1);
    CHECK(fstatat(root_fd, "43", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == 0);
    CHECK(symlinkat("42", root_fd, "44") == 0);
    CHECK(bai_job_dir_create(root_fd, "44", USER_UID, USER_GID, why) == -1);
    CHECK(bai_job_dir_check(root_fd, "44", USER_UID, why) == -1);
    CHECK(bai_job_dir_check(root_fd, "45", USER_UID, why) == -1);
    /* No private name is left behind. */
    CHECK(faccessat(root_fd, ".43.new-0", F_OK, AT_SYMLINK_NOFOLLOW) != 0);
}

/* read_as_root: bai_root_file_read into buf; its return value. */
static int read_as_root(int root_fd, const char *name, size_t max, char *buf, size_t size, char *why)
{
    char *data = NULL;
    size_t len = 0;
    int rc = bai_root_file_read(root_fd, name, max, &data, &len, why);
    snprintf(buf, size, "%s", rc == 1 && strlen(data) == len ? data : "");
    free(data);
    return rc;
}

static void test_node_files(int root_fd)
{
    char name[300], buf[BAI_WHY_MAX], why[BAI_WHY_MAX];
    struct stat st;
    CHECK(bai_node_file_name(name, sizeof name, 7, BAI_NODE_FILE_FAILED, "node1") == 0 &&
          strcmp(name, "7.prolog-failed-node1") == 0);
    CHECK(bai_node_file_name(name, sizeof name, 7, BAI_NODE_FILE_JOB, "n2") == 0 && strcmp(name, "7.job-n2") == 0);
    CHECK(bai_node_file_name(name, sizeof name, 7, BAI_NODE_FILE_JOB, "../x") == -1);
    CHECK(bai_node_file_name(name, sizeof name, 7, BAI_NODE_FILE_JOB, ".hidden") == -1);
    CHECK(bai_node_file_name(name, sizeof name, 7, BAI_NODE_FILE_JOB, "") == -1);
    CHECK(bai_node_file_name(name, 8, 7, BAI_NODE_FILE_FAILED, "node1") == -1);
    /* Back from a name: the node of this job's file of this kind only. */
    const char *node = bai_node_file_node("7.job-n2", 7, BAI_NODE_FILE_JOB);
    CHECK(node && strcmp(node, "n2") == 0);
    CHECK(bai_node_file_node("7.job-n2", 7, BAI_NODE_FILE_FAILED) == NULL);
    CHECK(bai_node_file_node("77.job-n2", 7, BAI_NODE_FILE_JOB) == NULL);
    CHECK(bai_node_file_node("7.job-", 7, BAI_NODE_FILE_JOB) == NULL);
    CHECK(read_as_root(root_fd, "7.m", 100, buf, sizeof buf, why) == 0);
    CHECK(bai_root_file_write(root_fd, "7.m", "line one\nline two", 17, why) == 0);
    CHECK(read_as_root(root_fd, "7.m", 100, buf, sizeof buf, why) == 1 && strcmp(buf, "line one\nline two") == 0);
    CHECK(fstatat(root_fd, "7.m", &st, 0) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == 0);
    /* Bounded: a file over the reader's limit is refused, not cut. */
    CHECK(read_as_root(root_fd, "7.m", 16, buf, sizeof buf, why) == -1 && strstr(why, "more than 16"));
    /* Bytes, not text: a NUL inside comes back whole. */
    char *data = NULL;
    size_t len = 0;
    CHECK(bai_root_file_write(root_fd, "7.b", "a\0b", 3, why) == 0);
    CHECK(bai_root_file_read(root_fd, "7.b", 3, &data, &len, why) == 1 && len == 3 && memcmp(data, "a\0b", 4) == 0);
    free(data);
    /* A symbolic link in the file's place is replaced, not written through. */
    int f = open(at("victim"), O_CREAT | O_WRONLY, 0644);
    CHECK(f >= 0);
    close(f);
    CHECK(symlinkat(at("victim"), root_fd, "8.m") == 0);
    CHECK(read_as_root(root_fd, "8.m", 100, buf, sizeof buf, why) == -1);
    CHECK(bai_root_file_write(root_fd, "8.m", "why", 3, why) == 0);
    CHECK(stat(at("victim"), &st) == 0 && st.st_size == 0);
    CHECK(read_as_root(root_fd, "8.m", 100, buf, sizeof buf, why) == 1 && strcmp(buf, "why") == 0);
    /* A FIFO does not stall the reader; a file of the user's is not taken as root's word. */
    CHECK(mkfifoat(root_fd, "9.m", 0600) == 0);
    CHECK(read_as_root(root_fd, "9.m", 100, buf, sizeof buf, why) == -1 && strstr(why, "not a regular file"));
    f = openat(root_fd, "10.m", O_CREAT | O_WRONLY, 0600);
    CHECK(f >= 0 && fchown(f, USER_UID, USER_GID) == 0);
    close(f);
    CHECK(read_as_root(root_fd, "10.m", 100, buf, sizeof buf, why) == -1);
}

/* A tree of the user's: 200 directories deep (past the removal's depth bound), mode-000 directories, files,
 * and a symbolic link out of it to a file that must survive. */
static void make_user_tree(const char *top)
{
    char path[8192];
    snprintf(path, sizeof path, "%s", top);
    for (int i = 0; i < 200; i++) {
        size_t n = strlen(path);
        snprintf(path + n, sizeof path - n, "/d");
        CHECK(mkdir(path, 0700) == 0 && chown(path, USER_UID, USER_GID) == 0);
    }
    snprintf(path, sizeof path, "%s/locked", top);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/locked/f", top);
    int f = open(path, O_CREAT | O_WRONLY, 0600);
    CHECK(f >= 0 && fchown(f, USER_UID, USER_GID) == 0);
    close(f);
    snprintf(path, sizeof path, "%s/locked", top);
    CHECK(chown(path, USER_UID, USER_GID) == 0 && chmod(path, 0) == 0);
    snprintf(path, sizeof path, "%s/out", top);
    CHECK(symlink(at("keep"), path) == 0 && lchown(path, USER_UID, USER_GID) == 0);
}

static void test_remove_contents(int root_fd)
{
    char why[BAI_WHY_MAX];
    int f = open(at("keep"), O_CREAT | O_WRONLY, 0644);
    CHECK(f >= 0);
    close(f);
    CHECK(bai_job_dir_create(root_fd, "50", USER_UID, USER_GID, why) == 0);
    make_user_tree(at("50"));
    int dir = openat(root_fd, "50", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    CHECK(dir >= 0);
    /* As the user, as the epilog runs it. */
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setresgid(USER_GID, USER_GID, USER_GID) != 0 ||
            setresuid(USER_UID, USER_UID, USER_UID) != 0)
            _exit(2);
        _exit(bai_remove_contents(dir) == 0 ? 0 : 1);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(dir);
    CHECK(access(at("keep"), F_OK) == 0);
    CHECK(unlinkat(root_fd, "50", AT_REMOVEDIR) == 0); /* it was empty */
}

/* job_temp under a sticky parent, taken first: bai_scratch_dir_open refuses a user's entry, reclaim moves it
 * aside (the entry itself: a link's target and a directory's contents are untouched and stay the user's) and
 * makes root's; what is root's and not a root directory stays refused and in place. */
static void test_scratch_reclaim(void)
{
    char why[BAI_WHY_MAX], moved[BAI_WHY_MAX], aside[4096];
    struct stat st;
    CHECK(mkdir(at("sticky"), 0755) == 0 && chmod(at("sticky"), 01777) == 0);
    CHECK(mkdir(at("theirs"), 0755) == 0 && chown(at("theirs"), USER_UID, USER_GID) == 0);
    for (int k = 0; k < 3; k++) { /* a directory, a link to one, a FIFO */
        int made = k == 0 ? mkdir(at("sticky/temp"), 0700) : k == 1 ? symlink(at("theirs"), at("sticky/temp"))
                                                                    : mkfifo(at("sticky/temp"), 0600);
        CHECK(made == 0 && lchown(at("sticky/temp"), USER_UID, USER_GID) == 0);
        CHECK(bai_scratch_dir_open(at("sticky/temp"), why) == -1 && strstr(why, "a name a user took first"));
        int fd = bai_scratch_dir_reclaim(at("sticky/temp"), moved, why);
        CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0755 && S_ISDIR(st.st_mode));
        if (fd >= 0)
            close(fd);
        CHECK(strstr(moved, "of uid 65534) was moved aside to ") != NULL);
        const char *to = strstr(moved, "moved aside to ");
        snprintf(aside, sizeof aside, "%s", to ? to + 15 : "");
        CHECK(lstat(aside, &st) == 0 && st.st_uid == USER_UID &&
              (k == 0 ? S_ISDIR(st.st_mode) : k == 1 ? S_ISLNK(st.st_mode) : S_ISFIFO(st.st_mode)));
        CHECK(remove(aside) == 0 && rmdir(at("sticky/temp")) == 0);
    }
    CHECK(rmdir(at("theirs")) == 0); /* empty: nothing was made behind the link */
    /* Root's own non-directory is not moved, and nothing is reported as moved. */
    int fd = open(at("sticky/temp"), O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK(bai_scratch_dir_reclaim(at("sticky/temp"), moved, why) == -1 && moved[0] == '\0' &&
          strstr(why, "is not a directory"));
    CHECK(lstat(at("sticky/temp"), &st) == 0 && S_ISREG(st.st_mode));
    CHECK(unlink(at("sticky/temp")) == 0);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("SKIP(root): hands directories to uid %d and checks root's ownership\n", USER_UID);
        return 77;
    }
    /* Not under /tmp: every component of a trusted directory must be root's and writable by root alone. */
    snprintf(base, sizeof base, "/var/lib/bai-rootfs-XXXXXX");
    if (!mkdtemp(base) || chmod(base, 0755) != 0) {
        fprintf(stderr, "cannot make a directory under /var/lib: %s\n", strerror(errno));
        return 1;
    }
    char why[BAI_WHY_MAX];
    int root_fd = bai_trusted_dir_open(base, false, why);
    if (root_fd < 0) {
        fprintf(stderr, "%s is not trusted: %s\n", base, why);
        return 1;
    }
    test_trusted_dir_open();
    test_job_dir(root_fd);
    test_node_files(root_fd);
    test_remove_contents(root_fd);
    test_scratch_reclaim();
    close(root_fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx %s; rm -rf %s", base, base);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", base);
    return check_exit("rootfs");
}
