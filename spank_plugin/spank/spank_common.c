/* Shared parts of the SPANK plugin: option, site settings, loading a job file, dropping privileges. */
#include "spank_common.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


void bai_error(const char *fmt, ...)
{
    char raw[2048], out[2048 * 4 + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t o = 0;
    for (const unsigned char *c = (const unsigned char *)raw; *c; c++) {
        if (*c >= 0x20 && *c != 0x7f)
            out[o++] = (char)*c;
        else if (*c == '\n' || *c == '\t')
            o += (size_t)sprintf(out + o, "\\%c", *c == '\n' ? 'n' : 't');
        else
            o += (size_t)sprintf(out + o, "\\x%02x", *c);
    }
    out[o] = '\0';
    slurm_error("%s", out);
}

/* The option callback only checks that a value came; the work happens where Slurm lets it change things
 * (init in the allocator, user_init/prolog on the nodes). It can fire twice on the remote side. */
static int option_cb(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    if (!optarg || !*optarg) {
        bai_error("batchai: --%s needs the path of a job file", BAI_OPTION_NAME);
        return -1;
    }
    return 0;
}

static struct spank_option bai_option = {
    .name = BAI_OPTION_NAME,
    .arginfo = "FILE",
    .usage = "Run the Azure Batch AI job described by FILE (job.json); no script needed.",
    .has_arg = 1,
    .val = 0,
    .cb = option_cb,
};

int bai_option_register(spank_t sp)
{
    spank_err_t err = spank_option_register(sp, &bai_option);
    if (err != ESPANK_SUCCESS) {
        bai_error("batchai: cannot register --%s: %s", BAI_OPTION_NAME, spank_strerror(err));
        return -1;
    }
    return 0;
}

const char *bai_option_value(spank_t sp)
{
    char *value = NULL;
    if (spank_option_getopt(sp, &bai_option, &value) != ESPANK_SUCCESS || !value || !*value)
        return NULL;
    return value;
}

struct diag_log_ctx {
    const char *prefix;
};

static void log_one(void *arg, const char *msg)
{
    const struct diag_log_ctx *c = arg;
    bai_error("batchai: %s%s", c->prefix, msg);
}

void bai_log_diag(const struct bai_diag *d, const char *prefix)
{
    struct diag_log_ctx c = {prefix ? prefix : ""};
    bai_diag_each(d, log_one, &c);
}

int bai_site_load(int ac, char **av, struct bai_settings *site)
{
    struct bai_diag diag = {0};
    int rc = -1;

    if (bai_settings_init(site) != 0) {
        bai_error("batchai: out of memory reading plugstack arguments");
        return -1;
    }
    for (int i = 0; i < ac; i++)
        (void)bai_settings_apply(site, av[i], "plugstack.conf", true, &diag);
    if (bai_diag_total(&diag) > 0) {
        bai_log_diag(&diag, "");
        bai_error("batchai: the plugstack.conf line of spank_batchai.so has errors; fix it (see %s)",
                  "spank_plugin/README.md");
        bai_settings_free(site);
        goto out;
    }
    rc = 0;
out:
    bai_diag_free(&diag);
    return rc;
}

long long bai_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

pid_t bai_spawn_as_user(uid_t uid, gid_t gid, int keep_fd, int (*fn)(void *arg), void *arg)
{
    /* Everything that may allocate or consult NSS happens before fork. */
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
    if (pid < 0) {
        bai_error("batchai: fork: %s", strerror(errno));
        return -1;
    }
    if (pid != 0)
        return pid;
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

/* Child side of reading a job file as its user: the content to the pipe; exit 0, or 1 with the reason
 * written to the pipe after a NUL byte (the parent tells them apart by the exit status). */
struct read_ctx {
    const char *path;
    int fd_out;
};

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void first_message(void *arg, const char *msg)
{
    char *why = arg;
    if (!why[0])
        snprintf(why, BAI_WHY_MAX, "%s", msg);
}

static int read_child(void *arg)
{
    const struct read_ctx *c = arg;
    struct bai_diag diag = {0};
    char *text = NULL;
    size_t len = 0;
    if (bai_job_read(c->path, &text, &len, &diag) == 0)
        return write_all(c->fd_out, text, len) == 0 ? 0 : 2;
    char why[BAI_WHY_MAX] = "";
    bai_diag_each(&diag, first_message, why);
    return write_all(c->fd_out, why, strlen(why)) == 0 ? 1 : 2;
}

/* Read the file as uid/gid into a new buffer, by deadline_ms. The parent drains the pipe while the child
 * writes (a pipe holds 64 KiB, the file up to BAI_JOB_MAX_BYTES), polling so that a child stuck on a dead
 * file system cannot hold it past the deadline. */
static int read_as_user(const struct bai_source *src, char **text, size_t *len, struct bai_diag *diag)
{
    int p[2];
    char *buf = NULL;
    size_t used = 0;
    long long start_ms = bai_now_ms();

    if (pipe2(p, O_CLOEXEC) != 0) {
        bai_diag_add(diag, NULL, "pipe: %s", strerror(errno));
        return -1;
    }
    struct read_ctx c = {src->path, p[1]};
    pid_t pid = bai_spawn_as_user(src->uid, src->gid, p[1], read_child, &c);
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        bai_diag_add(diag, NULL, "cannot start a process to read it");
        return -1;
    }
    buf = malloc(BAI_JOB_MAX_BYTES + 2);
    bool late = false;
    while (buf && used <= BAI_JOB_MAX_BYTES) {
        long long left = src->deadline_ms - bai_now_ms();
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
    int code = bai_wait_child(pid, late ? 0 : src->deadline_ms);
    if (!buf)
        bai_diag_add(diag, NULL, "out of memory");
    else if (late || code == -2)
        bai_diag_add(diag, NULL, "reading it took longer than %lld s (a file system that does not answer?)",
                     (src->deadline_ms - start_ms + 999) / 1000);
    else if (code == 1) {
        buf[used] = '\0';
        bai_diag_add(diag, NULL, "%s", buf);
    } else if (code != 0 || used > BAI_JOB_MAX_BYTES)
        bai_diag_add(diag, NULL, "cannot read it (status %d)", code);
    else {
        buf[used] = '\0';
        *text = buf;
        *len = used;
        return 0;
    }
    free(buf);
    return -1;
}

struct load_read {
    const struct bai_source *src;
    struct bai_loaded *l;
};

/* bai_load's reader: the source's bytes, or the file read as the user; either way a copy is kept in l. */
static int read_user(void *arg, const char *path, char **text, size_t *len, struct bai_diag *diag)
{
    (void)path; /* the source's */
    const struct load_read *r = arg;
    if (r->src->content) {
        *len = r->src->content_len;
        *text = malloc(*len + 1);
        if (*text) {
            memcpy(*text, r->src->content, *len);
            (*text)[*len] = '\0';
        }
    } else if (read_as_user(r->src, text, len, diag) != 0)
        return -1;
    r->l->text = *text ? malloc(*len + 1) : NULL;
    if (!r->l->text) {
        free(*text);
        *text = NULL;
        bai_diag_add(diag, NULL, "out of memory");
        return -1;
    }
    memcpy(r->l->text, *text, *len + 1);
    r->l->text_len = *len;
    return 0;
}

int bai_load(struct bai_loaded *l, int ac, char **av, const struct bai_source *src, enum bai_job_level level,
             char *why)
{
    struct bai_diag diag = {0};
    int rc = -1;

    memset(l, 0, sizeof *l);
    if (why)
        why[0] = '\0';
    if (bai_site_load(ac, av, &l->site) != 0) {
        if (why)
            snprintf(why, BAI_WHY_MAX, "the plugin's plugstack.conf line has errors (see the slurmd log)");
        return -1;
    }
    l->have_site = true;
    struct bai_job_source js = {.path = src->path, .digest = src->digest};
    struct load_read r = {src, l};
    struct bai_job_reader reader = {read_user, &r};
    if (bai_job_open(&js, &l->site, level, &reader, &l->file, &diag) == 0) {
        l->have_file = true;
        rc = 0;
    } else {
        char prefix[PATH_MAX + 8];
        snprintf(prefix, sizeof prefix, "%s: ", src->path);
        bai_log_diag(&diag, prefix);
        if (why) {
            char first[BAI_WHY_MAX] = "";
            bai_diag_each(&diag, first_message, first);
            snprintf(why, BAI_WHY_MAX, "%.200s: %s", src->path, first);
        }
        bai_loaded_free(l);
    }
    bai_diag_free(&diag);
    return rc;
}

void bai_loaded_free(struct bai_loaded *l)
{
    if (l->text) {
        explicit_bzero(l->text, l->text_len);
        free(l->text);
    }
    if (l->have_file)
        bai_opened_free(&l->file);
    if (l->have_site)
        bai_settings_free(&l->site);
    memset(l, 0, sizeof *l);
}

char *bai_abspath(const char *path, const char *base)
{
    char cwd[PATH_MAX];
    char *out = NULL;
    if (path[0] == '/')
        return strdup(path);
    if (!base || !*base) {
        if (!getcwd(cwd, sizeof cwd))
            return strdup(path);
        base = cwd;
    }
    if (asprintf(&out, "%s/%s", base, path) < 0)
        return NULL;
    return out;
}
