/* Running the parser child and holding its plan to the site (plan_child.h). */
#include "plan_child.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node/as_user.h"
#include "node/rootfs.h"
#include "sha256.h"
#include "write_all.h"

static int refuse(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(char *why, const char *fmt, ...)
{
    char msg[BAI_WHY_MAX - 40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(why, BAI_WHY_MAX, "the job's plan is refused: %s", msg);
    return -1;
}

/* An absolute path with no empty, "." or ".." component and no control character: what root compares is
 * what the kernel will resolve. */
static bool clean_path(const char *p)
{
    size_t n = strlen(p);
    if (p[0] != '/' || n >= PATH_MAX || (n > 1 && p[n - 1] == '/'))
        return false;
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return false;
    for (const char *c = p; *c; c++) {
        if (*c != '/')
            continue;
        const char *e = c + 1;
        size_t len = strcspn(e, "/");
        if ((len == 0 && n > 1) || (len == 1 && e[0] == '.') || (len == 2 && e[0] == '.' && e[1] == '.'))
            return false;
    }
    return true;
}

/* `p` is `dir` + "/" + something. */
static bool under(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(p, dir, n) == 0 && p[n] == '/' && p[n + 1];
}

static bool env_name_ok(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_') || strlen(s) > 255)
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == strlen(s);
}

int bai_plan_hold(const struct bai_wire_plan *w, const struct bai_settings *site, uint32_t jobid, uid_t uid,
                  const char *digest, char *why)
{
    const struct bai_plan *p = &w->plan;
    char want[PATH_MAX];
    if (w->jobid != jobid)
        return refuse(why, "it is for job %u, not this job (%u)", (unsigned)w->jobid, (unsigned)jobid);
    if (w->uid != uid)
        return refuse(why, "it is for uid %u, not the job's (%u)", (unsigned)w->uid, (unsigned)uid);
    if (strcmp(w->digest, digest) != 0)
        return refuse(why, "it is for another job file (SHA-256 %.16s..., the file read has %.16s...)", w->digest,
                      digest);
    snprintf(want, sizeof want, "%s/%%j", site->job_root);
    if (strcmp(p->job_dir, want) != 0)
        return refuse(why, "job directory %s is not %s", p->job_dir, want);
    if (!clean_path(p->log_dir))
        return refuse(why, "log directory %s is not a plain absolute path", p->log_dir);
    snprintf(want, sizeof want, "%s/%%j/secrets.env", site->job_root);
    if (p->secrets_file && strcmp(p->secrets_file, want) != 0)
        return refuse(why, "secrets file %s is not %s", p->secrets_file, want);
    snprintf(want, sizeof want, "%s/%%j/mounts", site->job_root);
    for (size_t i = 0; i < p->n_mounts; i++) {
        const struct bai_plan_mount *m = &p->mounts[i];
        if (!clean_path(m->target) || !under(m->target, want))
            return refuse(why, "mount point %s is not under %s", m->target, want);
        if (!m->site_path)
            continue; /* an unmanaged file system's mount point: a directory the user makes */
        if (m->user_dir) {
            if (!site->user_shares || !m->share || !clean_path(m->site_path))
                return refuse(why, "share %s maps to %s, which the site does not let users map", m->share ? m->share : "?",
                              m->site_path);
            continue;
        }
        char *site_path = m->share ? bai_settings_share_path(site, m->share) : NULL;
        bool ok = site_path && strcmp(site_path, m->site_path) == 0;
        free(site_path);
        if (!ok)
            return refuse(why, "mount %s names %s, which is not where the site maps share %s", m->target,
                          m->site_path, m->share ? m->share : "(none)");
    }
    for (size_t i = 0; i < p->n_env; i++)
        if (!env_name_ok(p->env[i].name))
            return refuse(why, "variable %zu has no valid name", i);
    return 0;
}

/* The helper next to this plugin, opened on a file only root can replace: the plugin's directory must be a
 * trusted tree (rootfs.h), the helper a regular file of root's that no one else can write. */
static int helper_open(char *why)
{
    Dl_info info;
    char dir[PATH_MAX], reason[BAI_WHY_MAX];
    if (!dladdr((void *)bai_plan_get, &info) || !info.dli_fname || info.dli_fname[0] != '/' ||
        snprintf(dir, sizeof dir, "%s", info.dli_fname) >= (int)sizeof dir) {
        snprintf(why, BAI_WHY_MAX, "cannot find the plugin's own directory, where %s lives", BAI_PLAN_HELPER);
        return -1;
    }
    const char *d = dirname(dir);
    int dfd = bai_trusted_dir_open(d, false, reason);
    if (dfd < 0) {
        snprintf(why, BAI_WHY_MAX, "%.200s/%s cannot be used: %.250s", d, BAI_PLAN_HELPER, reason);
        return -1;
    }
    int fd = openat(dfd, BAI_PLAN_HELPER, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    close(dfd);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) ||
        !(st.st_mode & 0001)) {
        snprintf(why, BAI_WHY_MAX, "%s/%s %s (it must be an executable file of root's that only root can write; "
                 "make install puts it there)", d, BAI_PLAN_HELPER, fd < 0 ? strerror(err) : "cannot be used");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int bai_plan_get(const struct bai_plan_request *rq, const struct bai_settings *site, struct bai_wire_plan *w,
                 char *why)
{
    char digest[BAI_SHA256_HEX_LEN + 1], num[2][16], msg[BAI_WHY_MAX];
    memset(w, 0, sizeof *w);
    bai_sha256_hex(rq->text, rq->text_len, digest);
    if (rq->digest && strcmp(rq->digest, digest) != 0) {
        snprintf(why, BAI_WHY_MAX, "%.200s: the file changed after it was submitted; submit it again", rq->path);
        return -1;
    }
    int exe = helper_open(why);
    if (exe < 0)
        return -1;
    /* The bytes as the child's stdin, from memory: it opens nothing. */
    int in = memfd_create("batchai-job", MFD_CLOEXEC);
    if (in < 0 || bai_write_all(in, rq->text, rq->text_len) != 0 || lseek(in, 0, SEEK_SET) != 0) {
        snprintf(why, BAI_WHY_MAX, "cannot hand the job file to its parser: %s", strerror(errno));
        if (in >= 0)
            close(in);
        close(exe);
        return -1;
    }
    snprintf(num[0], sizeof num[0], "%u", (unsigned)rq->jobid);
    snprintf(num[1], sizeof num[1], "%u", (unsigned)rq->uid);
    /* Built before the fork: the child only execs. */
    size_t n = 0;
    char **argv = calloc((size_t)rq->ac + 10, sizeof *argv);
    if (!argv) {
        close(in);
        close(exe);
        snprintf(why, BAI_WHY_MAX, "out of memory");
        return -1;
    }
    argv[n++] = (char *)BAI_PLAN_HELPER;
    argv[n++] = num[0];
    argv[n++] = num[1];
    argv[n++] = (char *)rq->path;
    argv[n++] = rq->digest ? (char *)rq->digest : (char *)"";
    argv[n++] = rq->job_name ? (char *)rq->job_name : (char *)"";
    argv[n++] = rq->user_shares ? (char *)rq->user_shares : (char *)"";
    argv[n++] = rq->cluster ? (char *)rq->cluster : (char *)"";
    argv[n++] = (char *)"--";
    for (int i = 0; i < rq->ac; i++)
        argv[n++] = rq->av[i];
    char *envp[] = {(char *)"LC_ALL=C", NULL};
    /* A job of root's (batchai-job check-site's probe) is parsed by nobody: never by root. */
    uid_t uid = rq->uid == 0 ? BAI_PLAN_NOBODY : rq->uid;
    gid_t gid = rq->uid == 0 ? BAI_PLAN_NOBODY : rq->gid;
    struct bai_exec x = {.exe_fd = exe, .argv = argv, .envp = envp, .uid = uid, .gid = gid,
                         .cpu_s = BAI_PLAN_CPU_S, .as_bytes = BAI_PLAN_AS_BYTES};
    char *out = NULL;
    size_t len = 0;
    int rc = bai_exec_collect_as_user(&x, in, rq->deadline_ms, BAI_WIRE_MAX_BYTES, &out, &len, msg, sizeof msg);
    free(argv);
    close(in);
    close(exe);
    if (rc == 1) { /* the parser's verdict on the file, which the user may read as it is */
        snprintf(why, BAI_WHY_MAX, "%s", msg);
        return -1;
    }
    if (rc != 0) {
        snprintf(why, BAI_WHY_MAX, "the job file's parser (%s, as uid %u) failed: %.400s", BAI_PLAN_HELPER,
                 (unsigned)uid, msg);
        return -1;
    }
    char wire_why[BAI_WIRE_WHY_MAX];
    rc = bai_wire_plan_read(out, len, w, wire_why);
    explicit_bzero(out, len);
    free(out);
    if (rc != 0) {
        bai_plan_free(&w->plan);
        memset(w, 0, sizeof *w);
        return refuse(why, "malformed: %s", wire_why);
    }
    if (bai_plan_hold(w, site, rq->jobid, rq->uid, digest, why) != 0) {
        bai_plan_free(&w->plan);
        memset(w, 0, sizeof *w);
        return -1;
    }
    return 0;
}
