/* Root's file-system work inside job_root, all by directory fds: see rootfs.h. */
#include "rootfs.h"

#include "write_all.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/* A parent that users may write but not take over: root's, sticky, a directory (/tmp, mode 1777). Nobody but
 * root can rename or remove root's entries in it, so a root-owned child found there stays where it is. */
static bool sticky_parent(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 && (st.st_mode & S_ISVTX);
}

/* Is `name` in the sticky parent dir_fd a real directory of root's on the parent's file system (no mount
 * point)? Absent counts as yes (root makes it next). Never enters it. */
static bool root_child(int dir_fd, const char *name, const char *shown, char *why)
{
    struct statx parent, child;
    if (statx(dir_fd, "", AT_EMPTY_PATH, STATX_TYPE, &parent) != 0)
        return say(why, "%s: %s", shown, strerror(errno)), false;
    if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
              STATX_TYPE | STATX_UID, &child) != 0)
        return errno == ENOENT ? true : (say(why, "%s: %s", shown, strerror(errno)), false);
    if (!S_ISDIR(child.stx_mode))
        return say(why, "%s is not a directory (a name a user took first?)", shown), false;
    if (child.stx_uid != 0)
        return say(why, "%s is owned by uid %u, not root (a name a user took first?)", shown,
                   (unsigned)child.stx_uid), false;
    if (child.stx_dev_major != parent.stx_dev_major || child.stx_dev_minor != parent.stx_dev_minor)
        return say(why, "%s is a mount point", shown), false;
    return true;
}

/* `name` in the sticky parent dir_fd is not a root directory (root_child said why): when a user owns it,
 * rename it aside in the same parent, under a new name that says whose it was, so that root can make its
 * own. The rename moves the entry only: a link is not followed, a FIFO not opened, a directory's contents
 * are not entered and stay the user's; a mount point cannot be renamed (EBUSY) and stays refused. 0 with
 * `moved` set when done; -1 with `why` unchanged otherwise. */
static int move_aside(int dir_fd, const char *name, const char *shown, char *moved, char *why)
{
    struct statx child;
    char suffix[64], aside[320];
    if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_UID,
              &child) != 0 || child.stx_uid == 0)
        return -1;
    snprintf(suffix, sizeof suffix, ".taken-by-uid-%u.%ld", (unsigned)child.stx_uid, (long)time(NULL));
    if (snprintf(aside, sizeof aside, "%s%s", name, suffix) >= (int)sizeof aside)
        return -1;
    if (renameat2(dir_fd, name, dir_fd, aside, RENAME_NOREPLACE) != 0) {
        char first[BAI_WHY_MAX];
        snprintf(first, sizeof first, "%s", why);
        return say(why, "%.400s; moving it aside failed: %s", first, strerror(errno));
    }
    snprintf(moved, BAI_WHY_MAX, "%.200s (%s of uid %u) was moved aside to %.200s%s", shown,
             S_ISDIR(child.stx_mode) ? "a directory" : S_ISLNK(child.stx_mode) ? "a symbolic link" : "a non-directory",
             (unsigned)child.stx_uid, shown, suffix);
    return 0;
}

/* bai_trusted_dir_open, and bai_scratch_dir_open when `sticky` allows sticky parents; with `moved`, a
 * user's entry in a sticky parent is moved aside (move_aside). */
static int walk(const char *path, bool create, bool sticky, char *moved, char *why)
{
    char shown[4096];
    size_t shown_len = 0;

    if (path[0] != '/')
        return say(why, "%s is not an absolute path", path);
    int fd = open("/", DIR_FLAGS);
    bool parent_sticky = false; /* fd is a sticky parent accepted as such: only a trusted child may follow */
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
        /* Under a sticky parent a user may have taken the name first, even made it a mount point of a file
         * system that never answers an open: what is there is judged before it is entered, from what the
         * kernel already knows (AT_STATX_DONT_SYNC asks no file system server). */
        if (parent_sticky && !root_child(fd, name, shown, why) &&
            (!moved || move_aside(fd, name, shown, moved, why) != 0))
            goto fail;
        int next = openat(fd, name, DIR_FLAGS);
        if (next < 0 && errno == ENOENT && create) {
            /* The parent is trusted: nobody but root can create or swap this entry meanwhile; under a sticky
             * parent nobody but root can remove or rename it once root made it. */
            bool made = mkdirat(fd, name, 0755) == 0;
            if (!made && errno != EEXIST) {
                say(why, "cannot create %s: %s", shown, strerror(errno));
                goto fail;
            }
            if (!made && parent_sticky && !root_child(fd, name, shown, why))
                goto fail;
            next = openat(fd, name, DIR_FLAGS);
            if (next >= 0 && made && fchmod(next, 0755) != 0) { /* whatever the umask was */
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
        p += n;
        while (*p == '/')
            p++;
        if (trusted(fd, shown, why) != 0) {
            /* A sticky parent is passed through, never returned nor followed by another one. */
            if (!sticky || parent_sticky || !*p || !sticky_parent(fd))
                goto fail;
            parent_sticky = true;
            continue;
        }
        parent_sticky = false;
    }
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    return -1;
}

int bai_trusted_dir_open(const char *path, bool create, char *why)
{
    return walk(path, create, false, NULL, why);
}

int bai_scratch_dir_open(const char *path, char *why)
{
    return walk(path, true, true, NULL, why);
}

int bai_scratch_dir_reclaim(const char *path, char *moved, char *why)
{
    moved[0] = '\0';
    return walk(path, true, true, moved, why);
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

int bai_node_file_name(char *out, size_t size, unsigned jobid, const char *kind, const char *node)
{
    if (!node[0] || strchr(node, '/') || node[0] == '.')
        return -1;
    return snprintf(out, size, "%u.%s-%s", jobid, kind, node) < (int)size ? 0 : -1;
}

const char *bai_node_file_node(const char *name, unsigned jobid, const char *kind)
{
    char prefix[64];
    int n = snprintf(prefix, sizeof prefix, "%u.%s-", jobid, kind);
    if (n <= 0 || n >= (int)sizeof prefix || strncmp(name, prefix, (size_t)n) != 0 || !name[n])
        return NULL;
    return name + n;
}

int bai_root_file_write(int root_fd, const char *name, const void *data, size_t len, char *why)
{
    char tmp[300];
    if (snprintf(tmp, sizeof tmp, ".%s.tmp-%ld", name, (long)getpid()) >= (int)sizeof tmp)
        return say(why, "%s: name too long", name);
    (void)unlinkat(root_fd, tmp, 0);
    int fd = openat(root_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return say(why, "%s: %s", name, strerror(errno));
    int err = bai_write_all(fd, data, len) == 0 && fchmod(fd, 0600) == 0 && fsync(fd) == 0 ? 0 : errno;
    close(fd);
    if (!err && renameat(root_fd, tmp, root_fd, name) != 0)
        err = errno;
    if (err) {
        unlinkat(root_fd, tmp, 0);
        return say(why, "%s: %s", name, strerror(err));
    }
    return 0;
}

int bai_root_file_read(int root_fd, const char *name, size_t max, char **data, size_t *len, char *why)
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
    if ((unsigned long long)st.st_size > max) {
        close(fd);
        return say(why, "%s holds %lld bytes, more than %zu", name, (long long)st.st_size, max);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t used = 0;
    while (buf && used < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + used, (size_t)st.st_size - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    close(fd);
    if (!buf || used != (size_t)st.st_size) {
        free(buf);
        return say(why, "%s: %s", name, buf ? "cannot read it whole" : "out of memory");
    }
    buf[used] = '\0';
    *data = buf;
    *len = used;
    return 1;
}

/* Directories are opened, and held, at most this deep; a deeper one is moved up to the top directory
 * (same file system, same owner) and removed in a later pass. Bounds the fds held and the stack used,
 * whatever the depth of the tree. */
#define REMOVE_MAX_DEPTH 64

/* Make the directory `name` in dir_fd readable, writable and searchable by its owner (who runs this), so
 * that a mode-000 directory the user left can be emptied. Never follows a symbolic link. */
static void open_up(int dir_fd, const char *name, const struct stat *st)
{
    if ((st->st_mode & 0700) != 0700 && fchmodat(dir_fd, name, (st->st_mode & 07777) | 0700, AT_SYMLINK_NOFOLLOW) != 0) {
        /* opening or emptying it fails next, and that is reported */
    }
}

struct remove_pass {
    int top_fd;
    dev_t dev;
    unsigned moved;  /* directories moved up to top_fd in this pass */
    unsigned serial; /* names them, across passes */
    int first_err;
};

static void remove_err(struct remove_pass *r, int err)
{
    if (!r->first_err)
        r->first_err = err;
}

/* Depth-first, by fds: an entry is removed through its parent's fd, so no path is ever resolved twice. */
static void remove_in(int dir_fd, struct remove_pass *r, int depth)
{
    int fd = dup(dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        remove_err(r, errno);
        return;
    }
    rewinddir(d); /* the dup shares dir_fd's offset, which an earlier pass left at the end */
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        if (!S_ISDIR(st.st_mode)) {
            /* A symbolic link or a hard link loses its name here; nothing behind it is touched. */
            if (unlinkat(dir_fd, e->d_name, 0) != 0 && errno != ENOENT)
                remove_err(r, errno);
            continue;
        }
        if (st.st_dev != r->dev) {
            remove_err(r, EXDEV); /* a mount point: never crossed */
            continue;
        }
        open_up(dir_fd, e->d_name, &st);
        if (depth >= REMOVE_MAX_DEPTH) {
            char up[64];
            snprintf(up, sizeof up, ".deep-%ld-%u", (long)getpid(), r->serial++);
            if (renameat2(dir_fd, e->d_name, r->top_fd, up, RENAME_NOREPLACE) == 0)
                r->moved++;
            else
                remove_err(r, errno);
            continue;
        }
        int sub = openat(dir_fd, e->d_name, DIR_FLAGS);
        if (sub < 0) {
            remove_err(r, errno);
            continue;
        }
        struct stat sub_st;
        if (fstat(sub, &sub_st) != 0 || sub_st.st_dev != r->dev) { /* mounted on meanwhile */
            remove_err(r, EXDEV);
            close(sub);
            continue;
        }
        remove_in(sub, r, depth + 1);
        close(sub);
        /* Fails (ENOTEMPTY) when something inside stayed, or was moved up and is not gone yet. */
        if (unlinkat(dir_fd, e->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT && errno != ENOTEMPTY)
            remove_err(r, errno);
    }
    closedir(d);
}

int bai_remove_contents(int dir_fd)
{
    struct stat st;
    if (fstat(dir_fd, &st) != 0)
        return -1;
    struct remove_pass r = {.top_fd = dir_fd, .dev = st.st_dev};
    /* Each pass removes what it can and moves what lies deeper than REMOVE_MAX_DEPTH up to the top; the
     * next pass starts there. A pass that moved nothing is the last one. */
    do {
        r.moved = 0;
        r.first_err = 0;
        remove_in(dir_fd, &r, 0);
    } while (r.moved > 0);
    /* Anything left (a mount point, a directory of someone else's) is a failure. */
    int fd = dup(dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    bool empty = d != NULL;
    if (d)
        rewinddir(d);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            empty = false;
    if (d)
        closedir(d);
    else if (fd >= 0)
        close(fd);
    if (!empty) {
        errno = r.first_err ? r.first_err : ENOTEMPTY;
        return -1;
    }
    return 0;
}
