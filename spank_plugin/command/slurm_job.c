/* A Slurm job read for batchai-job: `scontrol -o show job`, else `sacct` once slurmctld has forgotten it
 * (MinJobAge), with a clear answer when the site keeps no accounting. */
#include "slurm_job.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobfile/batchai_jobfile.h"
#include "slurm_read.h"

#define COPY(dst, rec, key) snprintf((dst), sizeof(dst), "%s", bai_record_get((rec), (key)))

/* A job with a script of the user's own: the log directory its batch step named in the first lines of its
 * output (BAI_OWN_SCRIPT_LINE), read as the user running this command; it must be a Batch AI log directory of
 * this job ("/<job id>/stdouterr"). Nothing for a job in Batch AI's layout, or one that has not started. */
static void own_script_logs(struct bai_jobinfo *ji)
{
    char head[8192], tail[64], want[64];
    struct stat st;
    size_t len = strlen(ji->stdout_path);
    int n = snprintf(tail, sizeof tail, "/%s/stdouterr/stdout.txt", ji->id);
    if (ji->stdout_path[0] != '/' || (n > 0 && len > (size_t)n && strcmp(ji->stdout_path + len - (size_t)n, tail) == 0))
        return;
    int fd = open(ji->stdout_path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, head, sizeof head - 1) : -1;
    close(fd);
    if (got <= 0)
        return;
    head[got] = '\0';
    snprintf(want, sizeof want, "batchai: job %s runs ", ji->id);
    snprintf(tail, sizeof tail, "/%s/stdouterr", ji->id);
    for (char *line = head, *next; line; line = next) {
        next = strchr(line, '\n');
        if (!next) /* a line cut by the read is not taken */
            break;
        *next++ = '\0';
        char *logs = strncmp(line, want, strlen(want)) == 0 ? strstr(line, BAI_OWN_SCRIPT_LOGS) : NULL;
        if (!logs)
            continue;
        logs += strlen(BAI_OWN_SCRIPT_LOGS);
        size_t ll = strlen(logs);
        if (logs[0] == '/' && ll > strlen(tail) && strcmp(logs + ll - strlen(tail), tail) == 0 &&
            ll < sizeof ji->own_script_logs) {
            snprintf(ji->own_script_logs, sizeof ji->own_script_logs, "%s", logs);
            return;
        }
    }
}

static void from_record(struct bai_jobinfo *ji, const struct bai_record *rec)
{
    memset(ji, 0, sizeof *ji);
    COPY(ji->id, rec, "JobId");
    COPY(ji->state, rec, "JobState");
    COPY(ji->reason, rec, "Reason");
    COPY(ji->name, rec, "JobName");
    COPY(ji->user_id, rec, "UserId");
    COPY(ji->nodes, rec, "NumNodes");
    COPY(ji->cpus, rec, "NumCPUs");
    COPY(ji->partition, rec, "Partition");
    COPY(ji->node_list, rec, "NodeList");
    COPY(ji->batch_host, rec, "BatchHost");
    COPY(ji->exit_code, rec, "ExitCode");
    COPY(ji->restarts, rec, "Restarts");
    COPY(ji->submit_time, rec, "SubmitTime");
    COPY(ji->start_time, rec, "StartTime");
    COPY(ji->end_time, rec, "EndTime");
    COPY(ji->run_time, rec, "RunTime");
    COPY(ji->comment, rec, "Comment");
    COPY(ji->stdout_path, rec, "StdOut");
    COPY(ji->work_dir, rec, "WorkDir");
    if (strcmp(ji->node_list, "(null)") == 0)
        ji->node_list[0] = '\0';
    if (strcmp(ji->comment, "(null)") == 0)
        ji->comment[0] = '\0';
    own_script_logs(ji);
}

/* sacct's fields, split at a separator no value holds. */
static int from_accounting(const char *id, struct bai_jobinfo *ji, char *why, size_t why_size)
{
    char *argv[] = {"sacct", "-n", "-X", "-P", "--delimiter=\x1f", "-o",
                    "State,JobName,NNodes,ExitCode,NodeList,Submit,Start,End,Comment,User",
                    "-j", (char *)id, NULL};
    char *out, *err;
    int st = bai_run(argv, &out, &err);
    if (st != 0 || !out || !out[0]) {
        snprintf(why, why_size, "job %s is unknown to slurmctld (or it forgot the job after MinJobAge), and %s",
                 id, st != 0 ? "accounting cannot say either" : "accounting has no record of it");
        if (st != 0 && err && err[0])
            snprintf(why + strlen(why), why_size - strlen(why), " (sacct: %s)", err);
        free(out);
        free(err);
        return -1;
    }
    memset(ji, 0, sizeof *ji);
    snprintf(ji->id, sizeof ji->id, "%s", id);
    out[strcspn(out, "\n")] = '\0';
    char *f[10] = {0}, *p = out;
    for (int i = 0; i < 10 && p; i++) {
        f[i] = p;
        p = strchr(p, '\x1f');
        if (p)
            *p++ = '\0';
    }
#define FIELD(dst, i) snprintf((dst), sizeof(dst), "%s", f[i] ? f[i] : "")
    FIELD(ji->state, 0);
    ji->state[strcspn(ji->state, " ")] = '\0'; /* "CANCELLED by 1000" */
    FIELD(ji->name, 1);
    FIELD(ji->nodes, 2);
    FIELD(ji->exit_code, 3);
    FIELD(ji->node_list, 4);
    FIELD(ji->submit_time, 5);
    FIELD(ji->start_time, 6);
    FIELD(ji->end_time, 7);
    FIELD(ji->comment, 8);
    FIELD(ji->user_id, 9);
#undef FIELD
    if (strcmp(ji->node_list, "None assigned") == 0)
        ji->node_list[0] = '\0';
    ji->from_accounting = true;
    free(out);
    free(err);
    return 0;
}

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

int bai_job_load(const char *id, struct bai_jobinfo *ji, char *why, size_t why_size)
{
    if (!valid_jobid(id)) {
        snprintf(why, why_size, "'%s' is not a job id", id);
        return -1;
    }
    char *argv[] = {"scontrol", "-o", "show", "job", (char *)id, NULL};
    char *out, *err;
    int st = bai_run(argv, &out, &err);
    if (st == 0 && out && out[0]) {
        struct bai_record *rec = malloc(sizeof *rec);
        if (!rec) {
            free(out);
            free(err);
            snprintf(why, why_size, "out of memory");
            return -1;
        }
        bai_record_parse(rec, out, bai_job_keys);
        from_record(ji, rec);
        free(rec);
        free(out);
        free(err);
        return ji->state[0] ? 0 : (snprintf(why, why_size, "scontrol printed no JobState for job %s", id), -1);
    }
    /* scontrol answers "Invalid job id specified" for a job slurmctld no longer holds; anything else is
     * its own fault (no controller), said as it is. */
    bool unknown = err && strstr(err, "Invalid job id");
    if (!unknown && st != 0) {
        snprintf(why, why_size, "scontrol show job %s failed: %s", id, err && err[0] ? err : "no message");
        free(out);
        free(err);
        return -1;
    }
    free(out);
    free(err);
    return from_accounting(id, ji, why, why_size);
}

static int newest_first(const void *a, const void *b)
{
    long x = strtol(((const struct bai_jobinfo *)a)->id, NULL, 10),
         y = strtol(((const struct bai_jobinfo *)b)->id, NULL, 10);
    return (y > x) - (y < x);
}

int bai_job_list_user(unsigned uid, struct bai_jobinfo **jobs, size_t *n, char *why, size_t why_size)
{
    char *argv[] = {"scontrol", "-o", "show", "job", NULL};
    char *out, *err;
    *jobs = NULL;
    *n = 0;
    int st = bai_run(argv, &out, &err);
    if (st != 0 || !out) {
        snprintf(why, why_size, "scontrol show job failed: %s", err && err[0] ? err : "no message");
        free(out);
        free(err);
        return -1;
    }
    char want[32];
    snprintf(want, sizeof want, "(%u)", uid);
    struct bai_record *rec = malloc(sizeof *rec);
    size_t cap = 0;
    for (char *save = NULL, *line = rec ? strtok_r(out, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
        bai_record_parse(rec, line, bai_job_keys);
        const char *user = bai_record_get(rec, "UserId");
        size_t ul = strlen(user), wl = strlen(want);
        if (ul < wl || strcmp(user + ul - wl, want) != 0)
            continue;
        if (*n == cap) {
            struct bai_jobinfo *nj = realloc(*jobs, (cap = cap ? cap * 2 : 16) * sizeof *nj);
            if (!nj)
                break;
            *jobs = nj;
        }
        from_record(&(*jobs)[(*n)++], rec);
    }
    free(rec);
    free(out);
    free(err);
    if (*n)
        qsort(*jobs, *n, sizeof **jobs, newest_first);
    return 0;
}

bool bai_job_log_dir(const struct bai_jobinfo *ji, char *dir, size_t size)
{
    if (ji->own_script_logs[0])
        return snprintf(dir, size, "%s", ji->own_script_logs) < (int)size;
    if (ji->stdout_path[0] != '/' || snprintf(dir, size, "%s", ji->stdout_path) >= (int)size)
        return false;
    char *slash = strrchr(dir, '/');
    *(slash == dir ? slash + 1 : slash) = '\0';
    return true;
}

bool bai_job_is_batchai(const struct bai_jobinfo *ji)
{
    char tail[64];
    int n = snprintf(tail, sizeof tail, "/%s/stdouterr/stdout.txt", ji->id);
    size_t len = strlen(ji->stdout_path);
    return (n > 0 && len > (size_t)n && strcmp(ji->stdout_path + len - (size_t)n, tail) == 0) ||
           ji->own_script_logs[0];
}

static bool state_in(const char *s, const char *const set[])
{
    for (int i = 0; set[i]; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}

const char *bai_job_execution_state(const struct bai_jobinfo *ji)
{
    static const char *const queued[] = {"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "SUSPENDED",
                                         "RESV_DEL_HOLD", NULL};
    static const char *const running[] = {"RUNNING", "CONFIGURING", "RESIZING", NULL};
    static const char *const terminating[] = {"COMPLETING", "SIGNALING", "STAGE_OUT", "STOPPED", NULL};
    const char *s = ji->state;
    char when[64];
    if (state_in(s, queued))
        return "queued";
    bool marked = bai_job_terminated_at(ji, when, sizeof when)[0] != '\0';
    if (state_in(s, running))
        return marked ? "terminating" : "running";
    if (state_in(s, terminating))
        return "terminating";
    /* Cancelled while it waited: it never ran, so no exit code speaks for it. */
    if (strcmp(s, "CANCELLED") == 0 && !ji->node_list[0])
        return "cancelled";
    /* However its steps ended (a checkpoint saved and exit 3, a trap's exit 0, cancelled after the grace). */
    if (marked)
        return "terminated";
    if (strcmp(s, "COMPLETED") == 0)
        return "succeeded";
    return "failed"; /* FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, PREEMPTED */
}

bool bai_job_ended(const struct bai_jobinfo *ji)
{
    const char *e = bai_job_execution_state(ji);
    return strcmp(e, "succeeded") == 0 || strcmp(e, "failed") == 0 || strcmp(e, "cancelled") == 0 ||
           strcmp(e, "terminated") == 0;
}

int bai_job_exit_status(const struct bai_jobinfo *ji)
{
    int code = 0, sig = 0;
    if (sscanf(ji->exit_code, "%d:%d", &code, &sig) < 1)
        return -1;
    return code ? code : sig ? 128 + sig : 0;
}

/* The value of the comment's word TAG<value>, or "". */
static const char *comment_word(const struct bai_jobinfo *ji, const char *tag, char *buf, size_t size)
{
    buf[0] = '\0';
    for (const char *p = ji->comment; (p = strstr(p, tag)) != NULL; p++)
        if (p == ji->comment || p[-1] == ' ') {
            snprintf(buf, size, "%.*s", (int)strcspn(p + strlen(tag), " "), p + strlen(tag));
            break;
        }
    return buf;
}

const char *bai_job_experiment(const struct bai_jobinfo *ji, char *buf, size_t size)
{
    return comment_word(ji, BAI_EXPERIMENT_TAG, buf, size);
}

const char *bai_job_terminated_at(const struct bai_jobinfo *ji, char *buf, size_t size)
{
    return comment_word(ji, BAI_TERMINATED_TAG, buf, size);
}
