/* batchai-plan: the job file's parser for the prolog (plan_child.h, SECURITY.md). The prolog runs it as the
 * job's user, with no new privileges, CPU, memory and descriptor limits and the prolog's deadline; it
 * confines itself further with seccomp before it parses a byte. It reads the job file's bytes from stdin,
 * opens, validates and translates them with the job-file library exactly as batchai-job does, and writes the
 * plan (plan_wire.h) to stdout: status 0. Status 1: stdout holds the reason the file cannot be used.
 *
 *   batchai-plan JOBID UID PATH DIGEST NAME SHARES CLUSTER -- PLUGSTACK-ARGS...
 *
 * DIGEST, NAME, SHARES: "" when none. Built with BAI_PLAN_FAULTS (the test build, never installed), a job
 * file that contains BATCHAI_PLAN_FAULT=<fault> makes it misbehave on purpose, or (probe) report what it is and
 * may do (tests/cluster/hostile_plan.sh). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef BAI_HAVE_SECCOMP
#include <seccomp.h>
#endif

#include "jobfile/batchai_jobfile.h"
#include "plan_wire.h"
#include "write_all.h"

#define WHY_MAX 480

static int say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int say(const char *fmt, ...)
{
    char msg[WHY_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    (void)bai_write_all(1, msg, n > 0 ? ((size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) : 0);
    return 1;
}

/* From here on the process can only compute, allocate and write to what it holds: no file opened, no
 * socket, no exec. What glibc's allocator and stdio need is allowed; anything else fails with EPERM. */
static int confine(void)
{
#ifdef BAI_HAVE_SECCOMP
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    static const int allowed[] = {
        SCMP_SYS(read),     SCMP_SYS(write),        SCMP_SYS(close),       SCMP_SYS(exit),
        SCMP_SYS(exit_group), SCMP_SYS(brk),        SCMP_SYS(mmap),        SCMP_SYS(munmap),
        SCMP_SYS(mremap),   SCMP_SYS(mprotect),     SCMP_SYS(madvise),     SCMP_SYS(fstat),
        SCMP_SYS(newfstatat), SCMP_SYS(lseek),      SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask),
        SCMP_SYS(clock_gettime), SCMP_SYS(getpid),  SCMP_SYS(gettid),      SCMP_SYS(tgkill),
        SCMP_SYS(futex),    SCMP_SYS(getrandom),
    };
    int rc = ctx ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < sizeof allowed / sizeof allowed[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
    if (rc == 0)
        rc = seccomp_load(ctx);
    if (ctx)
        seccomp_release(ctx);
    return rc == 0 ? 0 : -1;
#else
    return 0;
#endif
}

struct input {
    char *text;
    size_t len;
};

static int read_input(void *arg, const char *path, char **text, size_t *len, struct bai_diag *diag)
{
    (void)path;
    const struct input *in = arg;
    *text = malloc(in->len + 1);
    if (!*text) {
        bai_diag_add(diag, NULL, "out of memory");
        return -1;
    }
    memcpy(*text, in->text, in->len + 1);
    *len = in->len;
    return 0;
}

static void first_message(void *arg, const char *msg)
{
    char *why = arg;
    if (!why[0])
        snprintf(why, WHY_MAX, "%s", msg);
}

#ifdef BAI_PLAN_FAULTS
/* The test build's probe: what the child is, before confine(), in `line`. */
static void probe_identity(char *line, size_t size)
{
    uid_t r, e, s;
    int fds = 0;
    struct stat st;
    for (int fd = 0; fd < 1024; fd++)
        fds += fstat(fd, &st) == 0;
    getresuid(&r, &e, &s);
    snprintf(line, size, "probe: uids %u/%u/%u, no_new_privs %d, descriptors %d", (unsigned)r, (unsigned)e,
             (unsigned)s, prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L), fds);
}

/* The test build's planted faults: what a parser bug a crafted file reached could make the child do. */
static void fault(const struct input *in, struct bai_wire_plan *w, const char *site_root)
{
    const char *f = strstr(in->text, "BATCHAI_PLAN_FAULT=");
    if (!f)
        return;
    f += strlen("BATCHAI_PLAN_FAULT=");
    if (strncmp(f, "crash", 5) == 0)
        raise(SIGSEGV);
    if (strncmp(f, "loop", 4) == 0)
        for (volatile unsigned long i = 0;; i++)
            ;
    if (strncmp(f, "flood", 5) == 0) {
        static char block[1 << 16];
        memset(block, 'A', sizeof block);
        for (int i = 0; i < 1600; i++) /* 100 MiB */
            if (bai_write_all(1, block, sizeof block) != 0)
                break;
        exit(0);
    }
    if (strncmp(f, "outside", 7) == 0 && w->plan.n_mounts > 0) {
        free(w->plan.mounts[0].site_path);
        w->plan.mounts[0].site_path = strdup("/etc");
    }
    if (strncmp(f, "escape", 6) == 0 && w->plan.n_mounts > 0) {
        free(w->plan.mounts[0].target);
        w->plan.mounts[0].target = strdup(site_root);
    }
    if (strncmp(f, "otherjob", 8) == 0)
        w->jobid += 1;
}
#endif

int main(int argc, char **argv)
{
    if (argc < 9 || strcmp(argv[8], "--") != 0) {
        fprintf(stderr, "usage: batchai-plan JOBID UID PATH DIGEST NAME SHARES CLUSTER -- PLUGSTACK-ARGS...\n");
        return 2;
    }
    /* Whatever the caller left open (it closes all but 0-2; a caller by hand may not). */
    (void)close_range(3, ~0U, 0);
    struct bai_wire_plan w = {0};
    w.jobid = (uint32_t)strtoul(argv[1], NULL, 10);
    w.uid = (uid_t)strtoul(argv[2], NULL, 10);
    const char *path = argv[3];
    struct bai_settings site;
    struct bai_diag diag = {0};
    char why[WHY_MAX] = "";
    if (bai_settings_init(&site) != 0)
        return say("out of memory");
    for (int i = 9; i < argc; i++)
        (void)bai_settings_apply(&site, argv[i], "plugstack.conf", true, &diag);
    if (bai_diag_total(&diag) > 0)
        return say("the plugin's plugstack.conf line has errors (see the slurmd log)");
    /* The bytes: at most BAI_JOB_MAX_BYTES (one more tells a longer input apart). */
    struct input in = {malloc(BAI_JOB_MAX_BYTES + 2), 0};
    if (!in.text)
        return say("out of memory");
    for (;;) {
        ssize_t n = read(0, in.text + in.len, BAI_JOB_MAX_BYTES + 1 - in.len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        in.len += (size_t)n;
        if (in.len > BAI_JOB_MAX_BYTES)
            return say("%s: more than %d bytes", path, BAI_JOB_MAX_BYTES);
    }
    in.text[in.len] = '\0';
#ifdef BAI_PLAN_FAULTS
    char probe[256] = "";
    if (strstr(in.text, "BATCHAI_PLAN_FAULT=probe"))
        probe_identity(probe, sizeof probe);
#endif
    if (confine() != 0)
        return say("cannot confine the job file's parser (seccomp)");
#ifdef BAI_PLAN_FAULTS
    if (probe[0]) { /* and what it can still do: open a file? */
        int fd = open("/", O_RDONLY | O_DIRECTORY);
        return say("%s, open(/) %s", probe, fd >= 0 ? "succeeded" : strerror(errno));
    }
#endif

    struct bai_job_source js = {.path = path, .digest = argv[4][0] ? argv[4] : NULL,
                                .job_name = argv[5][0] ? argv[5] : NULL, .user_shares = argv[6][0] ? argv[6] : NULL,
                                .cluster = argv[7][0] ? argv[7] : NULL};
    struct bai_job_reader reader = {read_input, &in};
    struct bai_opened o;
    if (bai_job_open(&js, &site, BAI_JOB_POLICY, &reader, &o, &diag) != 0) {
        bai_diag_each(&diag, first_message, why);
        return say("%.200s: %.270s", path, why);
    }
    snprintf(w.digest, sizeof w.digest, "%s", o.digest);
    w.plan = o.plan; /* lent: o frees it */
#ifdef BAI_PLAN_FAULTS
    fault(&in, &w, site.job_root);
#endif
    explicit_bzero(in.text, in.len); /* it may hold secrets' values */
    size_t len;
    char *out = bai_wire_plan_write(&w, &len);
    if (!out)
        return say("%.200s: the plan is over its limits (plan_wire.h)", path);
    if (bai_write_all(1, out, len) != 0)
        return 2;
    return 0;
}
