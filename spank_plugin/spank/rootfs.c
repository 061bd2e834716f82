/* Root's file-system work inside job_root, all by directory fds: see rootfs.h. */
#include "rootfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

static int say(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, BAI_WHY_MAX, fmt, ap);
    va_end(ap);
    return -1;
}

/* A directory root may trust: a real directory, root's, writable by root alone. */
static int trusted(int fd, const char *shown, char *why)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return say(why, "%s: %s", shown, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return say(why, "%s is not a directory", shown);
    if (st.st_uid != 0)
        return say(why, "%s is owned by uid %u, not root", shown, (unsigned)st.st_uid);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return say(why, "%s is writable by group or others (mode %04o)", shown, (unsigned)(st.st_mode & 07777));
    return 0;
}

int bai_trusted_dir_open(const char *path, bool create, char *why)
{
    char shown[4096];
    size_t shown_len = 0;

    if (path[0] != '/')
        return say(why, "%s is not an absolute path", path);
    int fd = open("/", DIR_FLAGS);
    if (fd < 0 || trusted(fd, "/", why) != 0)
        goto fail;
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (n == 0)
            break;
        char name[256];
        if (n >= sizeof name || shown_len + n + 2 >= sizeof shown) {
            say(why, "%s: a component is too long", path);
            goto fail;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        shown_len += (size_t)snprintf(shown + shown_len, sizeof shown - shown_len, "/%s", name);
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
            say(why, "%s: \".\" and \"..\" are not allowed", path);
            goto fail;
        }
        int next = openat(fd, name, DIR_FLAGS);
        if (next < 0 && errno == ENOENT && create) {
            /* The parent is trusted: nobody but root can create or swap this entry meanwhile. */
            if (mkdirat(fd, name, 0755) != 0 && errno != EEXIST) {
                say(why, "cannot create %s: %s", shown, strerror(errno));
                goto fail;
            }
            next = openat(fd, name, DIR_FLAGS);
            if (next >= 0 && fchmod(next, 0755) != 0) { /* whatever the umask was */
                say(why, "cannot set the mode of %s: %s", shown, strerror(errno));
                close(next);
                goto fail;
            }
        }
        if (next < 0) {
            say(why, "%s: %s", shown, errno == ELOOP || errno == ENOTDIR ? "is a symbolic link or not a directory"
                                                                          : strerror(errno));
            goto fail;
        }
        close(fd);
        fd = next;
        if (trusted(fd, shown, why) != 0)
            goto fail;
        p += n;
    }
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    return -1;
}

int bai_job_dir_check(int root_fd, const char *name, uid_t uid, char *why)
{
    struct stat st;
    if (fstatat(root_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return say(why, "%s: %s", name, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid)
        return say(why, "%s is not a directory of uid %u", name, (unsigned)uid);
    return 0;
}

int bai_job_dir_create(int root_fd, const char *name, uid_t uid, gid_t gid, char *why)
{
    char tmp[300];
    if (snprintf(tmp, sizeof tmp, ".%s.new-%ld", name, (long)getpid()) >= (int)sizeof tmp)
        return say(why, "job directory name too long: %s", name);
    (void)unlinkat(root_fd, tmp, AT_REMOVEDIR); /* left by a prolog killed at this point */
    if (mkdirat(root_fd, tmp, 0700) != 0)
        return say(why, "cannot create %s: %s", tmp, strerror(errno));
    int fd = openat(root_fd, tmp, DIR_FLAGS);
    if (fd < 0 || fchown(fd, uid, gid) != 0 || fchmod(fd, 0700) != 0) {
        say(why, "cannot hand %s to uid %u: %s", tmp, (unsigned)uid, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlinkat(root_fd, tmp, AT_REMOVEDIR);
        return -1;
    }
    close(fd);
    if (renameat2(root_fd, tmp, root_fd, name, RENAME_NOREPLACE) == 0)
        return 0;
    int err = errno;
    unlinkat(root_fd, tmp, AT_REMOVEDIR);
    if (err != EEXIST)
        return say(why, "cannot create %s: %s", name, strerror(err));
    return bai_job_dir_check(root_fd, name, uid, why);
}

int bai_marker_name(char *out, size_t size, unsigned jobid, const char *node)
{
    if (!node[0] || strchr(node, '/') || node[0] == '.')
        return -1;
    return snprintf(out, size, "%u.prolog-failed-%s", jobid, node) < (int)size ? 0 : -1;
}

int bai_marker_write(int root_fd, const char *name, const char *text)
{
    char tmp[300];
    if (snprintf(tmp, sizeof tmp, ".%s.tmp-%ld", name, (long)getpid()) >= (int)sizeof tmp)
        return -1;
    (void)unlinkat(root_fd, tmp, 0);
    int fd = openat(root_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int ok = dprintf(fd, "%s\n", text) > 0 && fchmod(fd, 0644) == 0;
    close(fd);
    if (!ok || renameat(root_fd, tmp, root_fd, name) != 0) {
        unlinkat(root_fd, tmp, 0);
        return -1;
    }
    return 0;
}

int bai_marker_read(int root_fd, const char *name, char *buf, size_t size, char *why)
{
    struct stat st;
    int fd = openat(root_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return say(why, "%s: %s", name, strerror(errno));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
        close(fd);
        return say(why, "%s is not a regular file of root's", name);
    }
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 1;
}

/* Depth-first, by fds: an entry is removed through its parent's fd, so no path is ever resolved twice. */
static int remove_in(int dir_fd, dev_t dev, int depth)
{
    int first_err = 0;
    int fd = dup(dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return errno;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        if (S_ISDIR(st.st_mode)) {
            if (st.st_dev != dev || depth >= 256) {
                first_err = first_err ? first_err : EXDEV; /* a mount point: never crossed */
                continue;
            }
            int sub = openat(dir_fd, e->d_name, DIR_FLAGS);
            if (sub < 0) {
                first_err = first_err ? first_err : errno;
                continue;
            }
            int err = remove_in(sub, dev, depth + 1);
            close(sub);
            if (err)
                first_err = first_err ? first_err : err;
            else if (unlinkat(dir_fd, e->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT)
                first_err = first_err ? first_err : errno;
        } else if (unlinkat(dir_fd, e->d_name, 0) != 0 && errno != ENOENT) {
            /* A symbolic link or a hard link loses its name here; nothing behind it is touched. */
            first_err = first_err ? first_err : errno;
        }
    }
    closedir(d);
    return first_err;
}

int bai_remove_contents(int dir_fd)
{
    struct stat st;
    if (fstat(dir_fd, &st) != 0)
        return -1;
    int err = remove_in(dir_fd, st.st_dev, 0);
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}
