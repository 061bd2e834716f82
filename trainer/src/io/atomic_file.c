/* atomic_file: temp file + fsync + rename + fsync of the directory. Contract in atomic_file.h. */
#include "io/atomic_file.h"
#include "io/errbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Split `path` into a malloc'd directory ("." when none) and a pointer to its base name. */
static char *dir_of(const char *path, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        *base = path;
        return strdup(".");
    }
    *base = slash + 1;
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* Host name with '.' and '/' replaced, so that it is one field of the temp name. */
static void host_tag(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0)
        snprintf(buf, len, "localhost");
    buf[len - 1] = '\0';
    for (char *p = buf; *p; p++)
        if (*p == '.' || *p == '/')
            *p = '_';
}

/* Remove the temporaries in `dir` of target `base` (NULL: of any target) written on this host by a process
 * that no longer exists. */
static int remove_stale(const char *dir, const char *base)
{
    char host[128], tag[160];
    host_tag(host, sizeof host);
    int tlen = snprintf(tag, sizeof tag, ".tmp.%s.", host);
    DIR *d = opendir(dir);
    int removed = 0;
    if (!d || tlen <= 0 || (size_t)tlen >= sizeof tag) {
        if (d)
            closedir(d);
        return 0;
    }
    const size_t blen = base ? strlen(base) : 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        /* ".<base>.tmp.<host>.<pid>.XXXXXX": the tag right after ".<base>", or (any target) its last
         * occurrence after a non-empty base. */
        const char *at = NULL;
        if (n[0] != '.')
            continue;
        if (base) {
            if (strncmp(n + 1, base, blen) == 0 && strncmp(n + 1 + blen, tag, (size_t)tlen) == 0)
                at = n + 1 + blen;
        } else
            for (const char *p = strstr(n + 2, tag); p; p = strstr(p + 1, tag))
                at = p;
        if (!at)
            continue;
        char *end;
        long pid = strtol(at + tlen, &end, 10);
        if (end == at + tlen || *end != '.' || pid <= 0)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* alive (or not ours to judge) */
        if (unlinkat(dirfd(d), n, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int atomic_file_cleanup_stale(const char *path)
{
    const char *base;
    char *dir = dir_of(path, &base);
    int removed = dir ? remove_stale(dir, base) : 0;
    free(dir);
    return removed;
}

int atomic_file_cleanup_dir(const char *dir)
{
    return remove_stale(dir, NULL);
}

int atomic_file_begin(struct atomic_file *af, const char *path, char *err, size_t errlen)
{
    memset(af, 0, sizeof *af);
    af->fd = -1;
    atomic_file_cleanup_stale(path);
    const char *base;
    char *dir = dir_of(path, &base);
    if (!dir || !*base) {
        set_err(err, errlen, "%s: not a file path", path);
        free(dir);
        return -1;
    }
    char host[128];
    host_tag(host, sizeof host);
    size_t n = strlen(dir) + strlen(base) + strlen(host) + 64;
    af->tmp_path = malloc(n);
    af->path = strdup(path);
    if (!af->tmp_path || !af->path) {
        set_err(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    snprintf(af->tmp_path, n, "%s/.%s.tmp.%s.%ld.XXXXXX", dir, base, host, (long)getpid());
    af->fd = mkstemp(af->tmp_path);
    if (af->fd < 0) {
        set_err(err, errlen, "%s: cannot create temporary file in %s: %s", path, dir, strerror(errno));
        goto fail;
    }
    /* mkstemp makes 0600; give the file the mode a plain creat() would have. */
    mode_t um = umask(0);
    umask(um);
    if (fchmod(af->fd, 0644 & ~um) != 0) {
        set_err(err, errlen, "%s: chmod: %s", af->tmp_path, strerror(errno));
        goto fail;
    }
    free(dir);
    return 0;
fail:
    free(dir);
    atomic_file_abort(af);
    return -1;
}

static void release(struct atomic_file *af)
{
    if (af->fd >= 0)
        close(af->fd);
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
    af->fd = -1;
}

void atomic_file_abort(struct atomic_file *af)
{
    if (af->tmp_path)
        unlink(af->tmp_path);
    release(af);
}

int atomic_file_commit(struct atomic_file *af, char *err, size_t errlen)
{
    if (fsync(af->fd) != 0) {
        set_err(err, errlen, "%s: fsync: %s", af->tmp_path, strerror(errno));
        goto fail;
    }
    if (rename(af->tmp_path, af->path) != 0) {
        set_err(err, errlen, "%s: rename from %s: %s", af->path, af->tmp_path, strerror(errno));
        goto fail;
    }
    const char *base;
    char *dir = dir_of(af->path, &base);
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    /* The new file is in place; a failed directory fsync only weakens durability across a power loss,
     * which the caller must still hear about. */
    int rc = 0;
    if (dfd < 0 || fsync(dfd) != 0) {
        set_err(err, errlen, "%s: fsync of directory %s: %s", af->path, dir ? dir : "?", strerror(errno));
        rc = -1;
    }
    if (dfd >= 0)
        close(dfd);
    free(dir);
    release(af);
    return rc;
fail:
    atomic_file_abort(af);
    return -1;
}
