/* batchai-job status/files/stream: the tutorial's `az batchai job show`, `job file list` and
 * `job file stream`, answered from Slurm's own commands (scontrol, and sacct once slurmctld has forgotten
 * the job). The log directory is the job's StdOut directory, where the plugin put the Batch AI layout. */
#include "monitor.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct job_info {
    char state[64];      /* Slurm JobState, e.g. RUNNING */
    char name[256];
    char nodes[32];
    char exit_code[32];
    char restarts[32];   /* Slurm's restart count: the attempt is restarts + 1 */
    char stdout_path[PATH_MAX];
};

static bool valid_jobid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 20)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]) && s[i] != '_')
            return false;
    return true;
}

/* Copy the value of "Key=" from a one-line scontrol record (values have no spaces except StdOut paths
 * with spaces, which the plugin never makes). */
static void field(const char *rec, const char *key, char *out, size_t size)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(rec, pat);
    out[0] = '\0';
    if (!p)
        return;
    p += strlen(pat);
    size_t n = strcspn(p, " \n");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p);
}

/* Run a command (no user text reaches the shell: the job id is digits) and read its first line. */
static int first_line(const char *cmd, char *buf, size_t size)
{
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    buf[0] = '\0';
    char *got = fgets(buf, (int)size, f);
    int st = pclose(f);
    if (!got || st != 0)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static int job_info(const char *jobid, struct job_info *ji)
{
    char cmd[128], *rec = malloc(65536);
    memset(ji, 0, sizeof *ji);
    if (!rec)
        return -1;
    snprintf(cmd, sizeof cmd, "scontrol -o show job %s 2>/dev/null", jobid);
    rec[0] = ' ';
    if (first_line(cmd, rec + 1, 65535) == 0) {
        field(rec, "JobState", ji->state, sizeof ji->state);
        field(rec, "JobName", ji->name, sizeof ji->name);
        field(rec, "NumNodes", ji->nodes, sizeof ji->nodes);
        field(rec, "ExitCode", ji->exit_code, sizeof ji->exit_code);
        field(rec, "Restarts", ji->restarts, sizeof ji->restarts);
        field(rec, "StdOut", ji->stdout_path, sizeof ji->stdout_path);
        free(rec);
        return ji->state[0] ? 0 : -1;
    }
    /* Purged from slurmctld: accounting, where the site has it. */
    snprintf(cmd, sizeof cmd, "sacct -n -X -P -o State,JobName,NNodes,ExitCode -j %s 2>/dev/null", jobid);
    if (first_line(cmd, rec, 65536) == 0 && rec[0]) {
        char *save, *tok = strtok_r(rec, "|", &save);
        if (tok) {
            snprintf(ji->state, sizeof ji->state, "%s", tok); /* "CANCELLED by 1000": first word */
            ji->state[strcspn(ji->state, " ")] = '\0';
        }
        if ((tok = strtok_r(NULL, "|", &save)))
            snprintf(ji->name, sizeof ji->name, "%s", tok);
        if ((tok = strtok_r(NULL, "|", &save)))
            snprintf(ji->nodes, sizeof ji->nodes, "%s", tok);
        if ((tok = strtok_r(NULL, "|", &save)))
            snprintf(ji->exit_code, sizeof ji->exit_code, "%s", tok);
    }
    free(rec);
    return ji->state[0] ? 0 : -1;
}

/* Batch AI's executionState for a Slurm job state. */
static const char *execution_state(const char *s)
{
    static const char *const queued[] = {"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "SUSPENDED",
                                         "RESV_DEL_HOLD", NULL};
    static const char *const running[] = {"RUNNING", "CONFIGURING", "RESIZING", NULL};
    static const char *const terminating[] = {"COMPLETING", "SIGNALING", "STAGE_OUT", "STOPPED", NULL};
    for (int i = 0; queued[i]; i++)
        if (strcmp(s, queued[i]) == 0)
            return "queued";
    for (int i = 0; running[i]; i++)
        if (strcmp(s, running[i]) == 0)
            return "running";
    for (int i = 0; terminating[i]; i++)
        if (strcmp(s, terminating[i]) == 0)
            return "terminating";
    if (strcmp(s, "COMPLETED") == 0)
        return "succeeded";
    return "failed"; /* FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, PREEMPTED */
}

static bool ended(const char *exec_state)
{
    return strcmp(exec_state, "succeeded") == 0 || strcmp(exec_state, "failed") == 0;
}

static int need_job(const char *jobid, struct job_info *ji)
{
    if (!valid_jobid(jobid)) {
        fprintf(stderr, "batchai-job: '%s' is not a job id\n", jobid);
        return 2;
    }
    if (job_info(jobid, ji) != 0) {
        fprintf(stderr, "batchai-job: job %s is unknown to Slurm (scontrol and sacct)\n", jobid);
        return 1;
    }
    return 0;
}

static int log_dir_of(const char *jobid, const struct job_info *ji, char *dir, size_t size)
{
    if (!ji->stdout_path[0] || ji->stdout_path[0] != '/') {
        fprintf(stderr, "batchai-job: job %s has no log directory Slurm still knows\n", jobid);
        return 1;
    }
    snprintf(dir, size, "%s", ji->stdout_path);
    char *slash = strrchr(dir, '/');
    *(slash == dir ? slash + 1 : slash) = '\0';
    return 0;
}

/* How attempt `attempt` ended, from the execution logs of `dir` (render.c marks every line "<time> attempt
 * N: <event>"): its latest signal line (SIGTERM, SIGUSR1), else its latest line, into out; "" when none
 * says. Only regular files are read. */
static void attempt_end(const char *dir, long attempt, char *out, size_t size)
{
    char tag[48], best[1024] = "", sig[1024] = "", line[1024], path[PATH_MAX];
    snprintf(tag, sizeof tag, " attempt %ld: ", attempt);
    out[0] = '\0';
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        if (strncmp(e->d_name, "execution-", 10) != 0 ||
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, tag)) { /* ISO times first: the latest sorts last */
                char *keep = strstr(line, ": SIG") ? sig : best;
                if (strcmp(line, keep) > 0)
                    snprintf(keep, sizeof best, "%s", line);
            }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    const char *line_of = sig[0] ? sig : best, *ev = strstr(line_of, tag);
    if (ev)
        snprintf(out, size, "%.*s (%.*s)", (int)strcspn(ev + strlen(tag), "\n"), ev + strlen(tag),
                 (int)(ev - line_of), line_of);
}

static int cmd_status(const char *jobid)
{
    struct job_info ji;
    int rc = need_job(jobid, &ji);
    if (rc)
        return rc;
    char dir[PATH_MAX] = "";
    if (ji.stdout_path[0] == '/')
        log_dir_of(jobid, &ji, dir, sizeof dir);
    printf("jobId:            %s\n", jobid);
    printf("name:             %s\n", ji.name);
    printf("executionState:   %s\n", execution_state(ji.state));
    printf("slurmState:       %s\n", ji.state);
    printf("nodeCount:        %s\n", ji.nodes);
    printf("exitCode:         %s\n", ji.exit_code);
    if (dir[0])
        printf("stdOutErrPath:    %s\n", dir);
    const long restarts = ji.restarts[0] ? strtol(ji.restarts, NULL, 10) : 0;
    if (ji.restarts[0])
        printf("attempt:          %ld\n", restarts + 1);
    if (restarts > 0) {
        char why[1100] = "";
        if (dir[0])
            attempt_end(dir, restarts, why, sizeof why);
        printf("lastRequeue:      attempt %ld ended: %s\n", restarts,
               why[0] ? why : "no event logged (its batch node was lost, or Slurm requeued it before its main step)");
    }
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int cmd_files(const char *jobid)
{
    struct job_info ji;
    char dir[PATH_MAX];
    struct dirent **ents;
    int rc = need_job(jobid, &ji);
    if (rc || (rc = log_dir_of(jobid, &ji, dir, sizeof dir)))
        return rc;
    int n = scandir(dir, &ents, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "batchai-job: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    printf("%-40s %12s  %s\n", "Name", "Size", "Modified");
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX * 2], when[32];
        struct stat st;
        struct tm tm;
        snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
        if (ents[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&st.st_mtime, &tm));
            printf("%-40s %12lld  %s\n", ents[i]->d_name, (long long)st.st_size, when);
        }
        free(ents[i]);
    }
    free(ents);
    return 0;
}

/* Print what is new in the file; returns the new offset. */
static long pump(const char *path, long off)
{
    FILE *f = fopen(path, "re");
    char buf[65536];
    size_t n;
    if (!f)
        return off;
    if (fseek(f, off, SEEK_SET) == 0)
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
            fwrite(buf, 1, n, stdout);
            off += (long)n;
        }
    fclose(f);
    fflush(stdout);
    return off;
}

static int cmd_stream(const char *jobid, const char *file)
{
    struct job_info ji;
    char dir[PATH_MAX], path[PATH_MAX * 2];
    int rc = need_job(jobid, &ji);
    if (rc || (rc = log_dir_of(jobid, &ji, dir, sizeof dir)))
        return rc;
    if (strchr(file, '/') || strcmp(file, "..") == 0 || strcmp(file, ".") == 0) {
        fprintf(stderr, "batchai-job: '%s' is not a file name of the log directory\n", file);
        return 2;
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    long off = 0;
    for (;;) {
        off = pump(path, off);
        if (job_info(jobid, &ji) != 0 || ended(execution_state(ji.state))) {
            off = pump(path, off); /* what was written between the last read and the end */
            break;
        }
        usleep(250 * 1000);
    }
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "batchai-job: %s: no such file in the job's log directory\n", file);
        return 1;
    }
    return 0;
}

int bai_monitor_main(const char *cmd, int argc, char **argv)
{
    if (strcmp(cmd, "stream") == 0 && (argc == 1 || argc == 2))
        return cmd_stream(argv[0], argc == 2 ? argv[1] : "stdout.txt");
    if (argc != 1) {
        fprintf(stderr, "usage: batchai-job %s JOBID%s\n", cmd, strcmp(cmd, "stream") == 0 ? " [FILE]" : "");
        return 2;
    }
    if (strcmp(cmd, "status") == 0)
        return cmd_status(argv[0]);
    if (strcmp(cmd, "files") == 0)
        return cmd_files(argv[0]);
    fprintf(stderr, "batchai-job: unknown command '%s'\n", cmd);
    return 2;
}
