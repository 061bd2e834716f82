/* Allocator context: sbatch/salloc with --batchai-job=FILE.
 *
 * sbatch calls slurm_spank_init before it reads its options or its script, and no SPANK call can set the
 * node or task count afterwards (see docs/architecture.md). So init finds the path in
 * /proc/self/cmdline itself, validates and translates the file, and, when the user gave no script,
 * puts the rendered script (whose #SBATCH lines carry the allocation) on standard input, where sbatch
 * reads a missing script from. Options typed on the command line are applied after #SBATCH lines, so
 * they still win. */
#include "spank_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node/as_user.h"
#include "handoff.h"
#include "jobfile/batchai_jobfile.h"
#include "spank_common.h"
#include "write_all.h"

static struct {
    struct bai_handoff handoff; /* job_file "" when the option is not used */
    int script_fd;              /* the memfd holding the rendered script now on stdin, or -1 */
    char *snapshot;             /* the file's bytes as validated, handed to the nodes; NULL: they read the path */
    size_t snapshot_len;
} alloc = {.script_fd = -1};

/* The value of --NAME[=]VALUE on our own command line (NAME one of the plugin's options), or NULL.
 * getopt_long accepts unambiguous prefixes: "--batchai-j", "--batchai-n", "--batchai-s" and "--batchai-c" are the shortest
 * spellings taken (shorter ones are ambiguous between them, or collide with --batch). Scanning stops at "--". Newly
 * allocated. */
static char *cmdline_option(const char *name)
{
    char opt[64];
    snprintf(opt, sizeof opt, "--%s", name);
    const size_t min_prefix = sizeof "--batchai-j" - 1;
    char *buf = NULL, *found = NULL;
    size_t cap = 0, len = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    for (;;) {
        if (len == cap) {
            char *nb = realloc(buf, cap ? cap * 2 : 4096);
            if (!nb)
                goto out;
            buf = nb;
            cap = cap ? cap * 2 : 4096;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (len == 0)
        goto out;
    buf[len - 1] = '\0';
    char *end = buf + len;
    char *arg = buf + strlen(buf) + 1; /* skip argv[0] */
    while (arg < end) {
        char *next = arg + strlen(arg) + 1;
        if (strcmp(arg, "--") == 0)
            break;
        char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (name_len >= min_prefix && name_len <= strlen(opt) && strncmp(arg, opt, name_len) == 0) {
            free(found); /* the last one counts, as for getopt and so on the nodes */
            found = NULL;
            if (eq)
                found = strdup(eq + 1);
            else if (next < end)
                found = strdup(next);
        }
        arg = next;
    }
out:
    free(buf);
    close(fd);
    return found;
}

/* sbatch reads a missing script from stdin. Replace stdin only when it carries nothing: a terminal, a
 * closed or empty file, /dev/null, or a pipe whose writer is gone without data. */
static bool stdin_is_free(void)
{
    struct stat st, null_st;
    if (isatty(STDIN_FILENO))
        return true;
    if (fstat(STDIN_FILENO, &st) != 0)
        return errno == EBADF;
    if (S_ISREG(st.st_mode))
        return lseek(STDIN_FILENO, 0, SEEK_CUR) >= st.st_size;
    if (S_ISCHR(st.st_mode))
        return stat("/dev/null", &null_st) == 0 && st.st_rdev == null_st.st_rdev;
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
    }
    return false;
}

static int put_script_on_stdin(const char *script)
{
    size_t len = strlen(script);
    int fd = memfd_create("batchai-job-script", MFD_CLOEXEC);
    if (fd < 0) {
        bai_error("batchai: memfd_create: %s", strerror(errno));
        return -1;
    }
    if (bai_write_all(fd, script, len) != 0) {
        bai_error("batchai: writing the batch script: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, STDIN_FILENO) < 0) {
        bai_error("batchai: putting the batch script on stdin: %s", strerror(errno));
        close(fd);
        return -1;
    }
    alloc.script_fd = fd;
    return 0;
}

int bai_alloc_init(spank_t sp, int ac, char **av)
{
    struct bai_loaded l;
    bool loaded = false;
    char *script = NULL;
    char *path = NULL, *abs = NULL, *name = NULL, *shares = NULL, *cluster = NULL;
    int rc = -1;

    if (bai_option_register(sp) != 0)
        goto out;
    path = cmdline_option(BAI_OPTION_NAME);
    if (!path) {
        /* Not a Batch AI job; still check the admin's settings so a broken plugstack line is loud. */
        struct bai_settings site;
        if (bai_site_load(ac, av, &site) != 0)
            goto out;
        bai_settings_free(&site);
        rc = 0;
        goto out;
    }
    abs = bai_abspath(path, NULL);
    if (!abs) {
        bai_error("batchai: out of memory");
        goto out;
    }
    if (strlen(abs) >= sizeof alloc.handoff.job_file) {
        bai_error("batchai: the path of %s is too long", path);
        goto out;
    }
    /* The allocator runs as the user: read the file directly. The absolute path is what the nodes use,
     * so the default job name (and with it the log directory) comes out the same everywhere. */
    name = cmdline_option(BAI_NAME_OPTION_NAME);
    shares = cmdline_option(BAI_SHARE_OPTION_NAME);
    cluster = cmdline_option(BAI_CLUSTER_OPTION_NAME);
    struct bai_source src = {.path = abs, .uid = (uid_t)-1, .gid = (gid_t)-1, .job_name = name, .user_shares = shares,
                             .cluster = cluster,
                             .deadline_ms = bai_now_ms() + BAI_JOB_READ_DEADLINE_MS, .keep_text = true};
    if (bai_load(&l, ac, av, &src, BAI_JOB_HOST, NULL) != 0) {
        bai_error("batchai: %s cannot run on this cluster (batchai-job validate says the same); nothing was "
                  "submitted", path);
        goto out;
    }
    loaded = true;
    if (strlen(l.file.plan.log_dir) >= sizeof alloc.handoff.log_dir) {
        bai_error("batchai: %s: the log directory's path is too long", path);
        goto out;
    }
    strcpy(alloc.handoff.job_file, abs);
    memcpy(alloc.handoff.digest, l.file.digest, sizeof alloc.handoff.digest);
    strcpy(alloc.handoff.log_dir, l.file.plan.log_dir);
    /* The snapshot: the job runs these bytes, whatever becomes of the file while it waits. Not for a file with
     * secrets, whose values would then sit in slurmctld's saved state: the nodes read that one from its path,
     * as the user, and it must not change. Nor above the size the prolog's environment carries. */
    if (!l.file.plan.secrets_file && l.text_len <= BAI_SNAPSHOT_MAX_BYTES) {
        alloc.snapshot = l.text;
        alloc.snapshot_len = l.text_len;
        l.text = NULL;
    }

    /* A job with its own script still gets the file's wall-clock limit (Batch AI's default: 7 days) unless
     * the user typed --time or set the variable: sbatch reads SBATCH_TIMELIMIT after the script's #SBATCH
     * lines and before the command line. */
    const char *limit_var = strcmp(program_invocation_short_name, "sbatch") == 0   ? "SBATCH_TIMELIMIT"
                            : strcmp(program_invocation_short_name, "salloc") == 0 ? "SALLOC_TIMELIMIT"
                                                                                   : NULL;
    if (limit_var && !getenv(limit_var)) {
        char limit[32];
        bai_format_time(l.file.plan.time_limit_seconds, limit, sizeof limit);
        if (setenv(limit_var, limit, 0) != 0) {
            bai_error("batchai: setenv: %s", strerror(errno));
            goto out;
        }
    }

    if (strcmp(program_invocation_short_name, "sbatch") == 0 && stdin_is_free()) {
        script = bai_render_script(&l.file.plan);
        if (!script) {
            bai_error("batchai: out of memory rendering the batch script");
            goto out;
        }
        if (put_script_on_stdin(script) != 0)
            goto out;
    }
    rc = 0;
out:
    free(script);
    free(path);
    free(name);
    free(shares);
    free(cluster);
    free(abs);
    if (loaded)
        bai_loaded_free(&l);
    return rc;
}

int bai_alloc_post_opt(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!alloc.handoff.job_file[0])
        return 0;
    /* sbatch has read its script by now: if it came from our memfd, its offset moved. */
    bool generated = alloc.script_fd >= 0 && lseek(alloc.script_fd, 0, SEEK_CUR) > 0;
    alloc.handoff.script = generated ? BAI_SCRIPT_GENERATED : BAI_SCRIPT_USER;
    return bai_handoff_put(sp, &alloc.handoff, alloc.snapshot);
}

int bai_alloc_exit(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    memset(&alloc.handoff, 0, sizeof alloc.handoff);
    if (alloc.snapshot) {
        explicit_bzero(alloc.snapshot, alloc.snapshot_len);
        free(alloc.snapshot);
    }
    alloc.snapshot = NULL;
    if (alloc.script_fd >= 0)
        close(alloc.script_fd);
    alloc.script_fd = -1;
    return 0;
}

int bai_local_init(spank_t sp, int ac, char **av)
{
    struct bai_settings site;
    if (bai_option_register(sp) != 0 || bai_site_load(ac, av, &site) != 0)
        return -1;
    bai_settings_free(&site);
    /* srun --batchai-job=FILE typed on srun's command line (a step's option inherited from the job's
     * environment is not there): the file is held to the site's rules as sbatch holds it, so that a file the
     * site refuses is refused with the rule's message, instead of a step whose tasks run while the option is
     * ignored (inside a Batch AI job every step runs with the job's own file, checked at submission). */
    char *path = cmdline_option(BAI_OPTION_NAME);
    if (!path)
        return 0;
    int rc = -1;
    struct bai_loaded l;
    char *abs = bai_abspath(path, NULL);
    const char *job_file = bai_handoff_local_job_file();
    if (!abs)
        bai_error("batchai: out of memory");
    else if (bai_load(&l, ac, av, &(struct bai_source){.path = abs, .uid = (uid_t)-1, .gid = (gid_t)-1,
                      .deadline_ms = bai_now_ms() + BAI_JOB_READ_DEADLINE_MS}, BAI_JOB_HOST, NULL) != 0)
        bai_error("batchai: %s cannot run on this cluster (batchai-job validate says the same); srun started "
                  "nothing", path);
    else {
        bai_loaded_free(&l);
        if (job_file && strcmp(job_file, abs) != 0)
            bai_error("batchai: this job's steps run with its own job file %s, checked when it was submitted: "
                      "srun --batchai-job=%s cannot change it; srun started nothing (submit that file with "
                      "sbatch --batchai-job)", job_file, path);
        else
            rc = 0;
    }
    free(abs);
    free(path);
    return rc;
}
