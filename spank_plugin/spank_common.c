/* Shared parts of the SPANK plugin: option, site settings, loading a job file, dropping privileges. */
#include "spank_common.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The option callback only checks that a value came; the work happens where Slurm lets it change things
 * (init in the allocator, user_init/prolog on the nodes). It can fire twice on the remote side. */
static int option_cb(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    if (!optarg || !*optarg) {
        slurm_error("batchai: --%s needs the path of a job file", BAI_OPTION_NAME);
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
        slurm_error("batchai: cannot register --%s: %s", BAI_OPTION_NAME, spank_strerror(err));
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
    slurm_error("batchai: %s%s", c->prefix, msg);
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
        slurm_error("batchai: out of memory reading plugstack arguments");
        return -1;
    }
    for (int i = 0; i < ac; i++)
        (void)bai_settings_apply(site, av[i], "plugstack.conf", true, &diag);
    if (bai_diag_total(&diag) > 0) {
        bai_log_diag(&diag, "");
        slurm_error("batchai: the plugstack.conf line of spank_batchai.so has errors; fix it (see %s)",
                    "spank_plugin/README.md");
        bai_settings_free(site);
        goto out;
    }
    rc = 0;
out:
    bai_diag_free(&diag);
    return rc;
}

int bai_run_as_user(uid_t uid, gid_t gid, int (*fn)(void *arg), void *arg)
{
    /* Everything that may allocate or consult NSS happens before fork. */
    gid_t groups[256];
    int ngroups = 0;
    struct passwd pw, *pwp = NULL;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) == 0 && pwp) {
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
        slurm_error("batchai: fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* slurmstepd may have switched only the effective uid: take root back to drop it for good. */
        if (geteuid() != 0 && getuid() == 0 && seteuid(0) != 0)
            _exit(126);
        if (setgroups((size_t)ngroups, groups) != 0 || setresgid(gid, gid, gid) != 0 ||
            setresuid(uid, uid, uid) != 0)
            _exit(126);
        /* Belt and braces: a child that can still become root must not run anything. */
        if (uid != 0 && setuid(0) == 0)
            _exit(126);
        _exit(fn(arg) & 0xff);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            slurm_error("batchai: waitpid: %s", strerror(errno));
            return -1;
        }
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return -1;
}

/* Child side of reading a job file as its user: copy the file to the pipe, exit with errno on failure. */
struct read_ctx {
    const char *path;
    int fd_out;
};

#define READ_NOT_REGULAR 200
#define READ_TOO_BIG 201

static int read_child(void *arg)
{
    const struct read_ctx *c = arg;
    int fd = open(c->path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno ? errno : EIO;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return errno;
    if (!S_ISREG(st.st_mode))
        return READ_NOT_REGULAR;
    if (st.st_size > BAI_JOB_MAX_BYTES)
        return READ_TOO_BIG;
    char chunk[8192];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n == 0)
            return 0;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(c->fd_out, chunk + off, (size_t)(n - off));
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                return errno;
            }
            off += w;
        }
    }
}

/* Read the file as uid/gid into a new buffer. A child (which itself runs the unprivileged reader through
 * bai_run_as_user) feeds a pipe that this process drains before reaping it: a pipe holds only 64 KiB and
 * the file may be up to BAI_JOB_MAX_BYTES. Messages leave out the path: the caller prefixes it. */
static int read_as_user(const char *path, uid_t uid, gid_t gid, char **text, size_t *len,
                        struct bai_diag *diag)
{
    int p[2];
    int rc = -1;
    char *buf = NULL;
    size_t used = 0;

    if (pipe2(p, O_CLOEXEC) != 0) {
        bai_diag_add(diag, NULL, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        bai_diag_add(diag, NULL, "fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        struct read_ctx c = {path, p[1]};
        int st = bai_run_as_user(uid, gid, read_child, &c);
        _exit(st < 0 ? 125 : st);
    }
    close(p[1]);
    buf = malloc(BAI_JOB_MAX_BYTES + 1);
    if (!buf) {
        bai_diag_add(diag, NULL, "out of memory");
        goto reap;
    }
    for (;;) {
        ssize_t n = read(p[0], buf + used, BAI_JOB_MAX_BYTES + 1 - used);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        used += (size_t)n;
        if (used > BAI_JOB_MAX_BYTES)
            break;
    }
reap:
    close(p[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 125;
    if (!buf)
        goto out;
    if (code == READ_NOT_REGULAR)
        bai_diag_add(diag, NULL, "not a regular file");
    else if (code == READ_TOO_BIG || used > BAI_JOB_MAX_BYTES)
        bai_diag_add(diag, NULL, "larger than %d bytes", BAI_JOB_MAX_BYTES);
    else if (code == 126 || code == 125)
        bai_diag_add(diag, NULL, "cannot read it as uid %u", (unsigned)uid);
    else if (code != 0)
        bai_diag_add(diag, NULL, "%s", strerror(code));
    else {
        buf[used] = '\0';
        *text = buf;
        *len = used;
        buf = NULL;
        rc = 0;
    }
out:
    free(buf);
    return rc;
}

int bai_load(struct bai_loaded *l, int ac, char **av, const char *path, uid_t as_uid, gid_t as_gid,
             const char *job_name)
{
    struct bai_diag diag = {0};
    char *text = NULL;
    size_t len = 0;
    int rc = -1;

    memset(l, 0, sizeof *l);
    if (bai_site_load(ac, av, &l->site) != 0)
        goto out;
    l->have_site = true;

    if (as_uid == (uid_t)-1) {
        if (bai_job_load(path, &l->job, &diag) != 0)
            goto fail;
    } else {
        if (read_as_user(path, as_uid, as_gid, &text, &len, &diag) != 0)
            goto fail;
        if (bai_job_parse(text, len, &l->job, &diag) != 0)
            goto fail;
    }
    l->have_job = true;

    struct bai_translate_opts opts = {.job_name = job_name, .job_file = path};
    if (bai_translate(&l->job, &l->site, &opts, &l->plan, &diag) != 0)
        goto fail;
    l->have_plan = true;
    rc = 0;
    goto out;
fail: {
    char prefix[PATH_MAX + 8];
    snprintf(prefix, sizeof prefix, "%s: ", path);
    bai_log_diag(&diag, prefix);
}
out:
    free(text);
    bai_diag_free(&diag);
    if (rc != 0)
        bai_loaded_free(l);
    return rc;
}

void bai_loaded_free(struct bai_loaded *l)
{
    if (l->have_plan)
        bai_plan_free(&l->plan);
    if (l->have_job)
        bai_job_free(&l->job);
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
