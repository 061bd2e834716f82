/* batchai-job status/files/stream/wait/nodes: the tutorial's `az batchai job show`, `job file list`,
 * `job file stream`, `job wait` and `job node list`, answered from Slurm's own commands (slurm_job.h) and the
 * job's log directory, where the plugin put the Batch AI layout. */
#include "monitor.h"

#include <cJSON.h>
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

#include "partition_fit.h"
#include "jobfile/batchai_jobfile.h"
#include "job_stop.h"
#include "slurm_job.h"
#include "slurm_read.h"

/* The job, refused with a message unless Slurm knows it and the plugin made it. Returns 0, else the exit
 * status. */
static int need_job(const char *jobid, struct bai_jobinfo *ji)
{
    char why[1024];
    if (bai_job_load(jobid, ji, why, sizeof why) != 0) {
        fprintf(stderr, "batchai-job: %s\n", why);
        return strstr(why, "not a job id") ? 2 : 1;
    }
    if (!bai_job_is_batchai(ji)) {
        fprintf(stderr, "batchai-job: job %s is not a Batch AI or Azure ML job (it was not submitted with "
                        "--batchai-job: its output is not a .../%s/stdouterr/stdout.txt log directory), or it has "
                        "a script of its own and has not started yet (its output names its Batch AI logs once it "
                        "has)\n",
                jobid, jobid);
        return 1;
    }
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
        FILE *f = fopen(path, "re");
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

/* The plugin's line in `line`, past the prefix Slurm's log puts before it when the plugin itself failed a
 * task on its node (the node's setup failing: an output directory that cannot be made, a job file changed
 * after submission): "slurmstepd: error: batchai: ..." (22.05), "[2026-12-02T00:01:10.212] error: batchai:
 * ..." (26.05). NULL when the line is not the plugin's. */
static const char *plugin_line(const char *line)
{
    const char *p = line;
    if (*p == '[') { /* a time stamp */
        const char *end = strstr(p, "] ");
        if (!end || end - p > 40)
            return NULL;
        p = end + 2;
    }
    if (strncmp(p, "slurmstepd", 10) == 0) { /* "slurmstepd: ", "slurmstepd-n1: " */
        size_t word = strcspn(p, " ");
        if (word < 11 || p[word - 1] != ':')
            return NULL;
        p += word + 1;
    }
    if (p != line) {
        if (strncmp(p, "error: ", 7) != 0)
            return NULL;
        p += 7;
    }
    return strncmp(p, "batchai: ", 9) == 0 || strncmp(p, "batchai-job: ", 13) == 0 ? p : NULL;
}

/* The lines the plugin and the batch script wrote for the user ("batchai: ...") to `path` (stderr.txt, or the
 * output of a job with a script of its own), as errors; each names its node. */
static void plugin_errors(const char *path, cJSON *errors)
{
    char line[2048];
    struct stat st;
    const char *msg;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof line, f) && cJSON_GetArraySize(errors) < 32)
        if ((msg = plugin_line(line)) && strncmp(msg, "batchai: attempt ", 17) != 0 &&
            !strstr(msg, BAI_OWN_SCRIPT_LOGS)) {
            /* the attempts' header lines, and the line naming an own script's logs, are not errors */
            line[strcspn(line, "\n")] = '\0';
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "code", "JobNodeError");
            cJSON_AddStringToObject(e, "message", msg + strcspn(msg, " ") + 1);
            cJSON_AddItemToArray(errors, e);
        }
    if (f)
        fclose(f);
}

/* A failed job without its log directory: its batch node could not make it or open stdout.txt there
 * (Slurm's 0:53), and the plugin's reason went to slurmd's log only. Said here as the user sees it: the
 * node, the directory, and the nearest existing directory above it the user cannot write. */
static void missing_log_dir(const struct bai_jobinfo *ji, const char *dir, cJSON *errors)
{
    char up[PATH_MAX], msg[3 * PATH_MAX];
    struct stat st;
    if (stat(dir, &st) == 0)
        return;
    snprintf(up, sizeof up, "%s", dir);
    for (char *slash; stat(up, &st) != 0 && (slash = strrchr(up, '/')) != NULL;)
        *(slash == up ? slash + 1 : slash) = '\0';
    int n = snprintf(msg, sizeof msg, "node %s could not make the job's log directory %s (Slurm exit code %s)",
                     ji->batch_host[0] && strcmp(ji->batch_host, "(null)") != 0 ? ji->batch_host : "(unknown)",
                     dir, ji->exit_code);
    if (n > 0 && (size_t)n < sizeof msg && access(up, W_OK | X_OK) != 0)
        snprintf(msg + n, sizeof msg - (size_t)n, ": %s is not writable by you", up);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "code", "JobNodeError");
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddItemToArray(errors, e);
}

static void add_time(cJSON *o, const char *name, const char *t)
{
    if (t[0] && strcmp(t, "Unknown") != 0 && strcmp(t, "None") != 0)
        cJSON_AddStringToObject(o, name, t);
    else
        cJSON_AddNullToObject(o, name);
}

/* The documented object of `status --json` (schemas/batchai-job-status.schema.json). */
static cJSON *status_object(const struct bai_jobinfo *ji)
{
    char dir[PATH_MAX] = "", exp[256];
    const char *exec = bai_job_execution_state(ji);
    bool have_dir = bai_job_log_dir(ji, dir, sizeof dir);
    cJSON *o = cJSON_CreateObject(), *info = cJSON_CreateObject(), *errors = cJSON_CreateArray(),
          *nodes = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "jobId", ji->id);
    cJSON_AddStringToObject(o, "name", ji->name);
    cJSON_AddStringToObject(o, "executionState", exec);
    cJSON_AddStringToObject(o, "slurmState", ji->state);
    bai_job_experiment(ji, exp, sizeof exp);
    if (exp[0])
        cJSON_AddStringToObject(o, "experiment", exp);
    else
        cJSON_AddNullToObject(o, "experiment");
    long restarts = ji->restarts[0] ? strtol(ji->restarts, NULL, 10) : 0;
    cJSON_AddNumberToObject(o, "attempt", (double)restarts + 1);
    if (restarts > 0) {
        char why[1100] = "";
        if (have_dir)
            attempt_end(dir, restarts, why, sizeof why);
        cJSON *lr = cJSON_AddObjectToObject(o, "lastRequeue");
        cJSON_AddNumberToObject(lr, "attempt", (double)restarts);
        cJSON_AddStringToObject(lr, "ended", why[0] ? why : "no event logged (its batch node was lost, or Slurm "
                                                            "requeued it before its main step)");
    } else
        cJSON_AddNullToObject(o, "lastRequeue");
    bool waiting = strcmp(exec, "queued") == 0;
    if (waiting && ji->reason[0] && strcmp(ji->reason, "None") != 0)
        cJSON_AddStringToObject(o, "pendingReason", ji->reason);
    else
        cJSON_AddNullToObject(o, "pendingReason");
    /* slurmctld queues a job bigger than its partition (unless EnforcePartLimits), and it waits for ever:
     * said with the partition's size (sbatch --batchai-job cannot ask; batchai-job validate and submit do). */
    struct bai_partition part;
    char never[700];
    if (waiting && (strcmp(ji->reason, "PartitionNodeLimit") == 0 || strcmp(ji->reason, "PartitionConfig") == 0) &&
        ji->partition[0] && bai_partition_read(ji->partition, &part) == 0 &&
        bai_partition_too_small(&part, strtol(ji->nodes, NULL, 10), strtol(ji->cpus, NULL, 10), never, sizeof never)) {
        char msg[800];
        snprintf(msg, sizeof msg, "it will never start: it asks for %s; cancel it and submit it smaller", never);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", "JobWillNotStart");
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddItemToArray(errors, e);
    }
    cJSON_AddNumberToObject(o, "nodeCount", ji->nodes[0] ? strtod(ji->nodes, NULL) : 0);
    if (ji->node_list[0])
        cJSON_AddItemToArray(nodes, cJSON_CreateString(ji->node_list));
    cJSON_AddItemToObject(o, "nodes", nodes);
    add_time(o, "submitTime", ji->submit_time);
    if (have_dir)
        cJSON_AddStringToObject(o, "stdOutErrPath", dir);
    else
        cJSON_AddNullToObject(o, "stdOutErrPath");
    cJSON_AddBoolToObject(o, "fromAccounting", ji->from_accounting);
    /* Batch AI's executionInfo: times, exit code, errors. */
    /* Slurm gives a job cancelled in the queue the cancel time as its StartTime: it never started. */
    add_time(info, "startTime", waiting || strcmp(exec, "cancelled") == 0 ? "" : ji->start_time);
    add_time(info, "endTime", bai_job_ended(ji) ? ji->end_time : "");
    int code = bai_job_exit_status(ji);
    if (bai_job_ended(ji) && strcmp(exec, "cancelled") != 0 && code >= 0)
        cJSON_AddNumberToObject(info, "exitCode", code);
    else
        cJSON_AddNullToObject(info, "exitCode");
    cJSON_AddStringToObject(info, "slurmExitCode", ji->exit_code);
    if (strcmp(exec, "failed") == 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "the job ended %s with exit code %s%s%s", ji->state, ji->exit_code,
                 ji->reason[0] && strcmp(ji->reason, "None") != 0 ? ", reason " : "",
                 ji->reason[0] && strcmp(ji->reason, "None") != 0 ? ji->reason : "");
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", "JobFailed");
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddItemToArray(errors, e);
    } else if (strcmp(exec, "terminated") == 0) {
        char msg[512], when[64];
        bai_job_terminated_at(ji, when, sizeof when);
        if (strcmp(ji->state, "CANCELLED") == 0)
            snprintf(msg, sizeof msg, "batchai-job terminate at %s: its steps had SIGTERM and did not stop within "
                     "the grace; the job was cancelled (exit code %s)", when, ji->exit_code);
        else
            snprintf(msg, sizeof msg, "batchai-job terminate at %s: its steps had SIGTERM and stopped; the job "
                     "ended %s with exit code %s", when, ji->state, ji->exit_code);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", "JobTerminated");
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddItemToArray(errors, e);
    } else if (strcmp(exec, "cancelled") == 0) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", "JobCancelled");
        cJSON_AddStringToObject(e, "message", "the job was cancelled while it waited in the queue; it never ran");
        cJSON_AddItemToArray(errors, e);
    }
    struct bai_job_stop stop = {0};
    if (have_dir && strcmp(exec, "queued") != 0 && strcmp(exec, "cancelled") != 0)
        bai_job_stop_read(dir, restarts + 1, &stop);
    if (stop.warned_at[0] && strcmp(exec, "failed") == 0) {
        char msg[PATH_MAX + 512];
        snprintf(msg, sizeof msg, "stopped at its time limit: Slurm's warning (SIGUSR1, x-checkpointable) came at %s "
                 "and its main step ended with exit code %s; %s%s", stop.warned_at, ji->exit_code,
                 stop.checkpoint[0] ? "its last checkpoint is " : "it named no checkpoint in stdout.txt",
                 stop.checkpoint);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", "JobTimeLimit");
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddItemToArray(errors, e);
    }
    if (stop.checkpoint[0])
        cJSON_AddStringToObject(o, "checkpoint", stop.checkpoint);
    else
        cJSON_AddNullToObject(o, "checkpoint");
    if (have_dir) {
        char path[PATH_MAX + 16];
        if (snprintf(path, sizeof path, "%s/stderr.txt", dir) < (int)sizeof path)
            plugin_errors(path, errors);
    }
    if (ji->own_script_logs[0]) /* what stopped the job before its script ran went to the script's output */
        plugin_errors(ji->stdout_path, errors);
    if (have_dir && strcmp(exec, "failed") == 0)
        missing_log_dir(ji, dir, errors);
    cJSON_AddItemToObject(info, "errors", errors);
    cJSON_AddItemToObject(o, "executionInfo", info);
    return o;
}

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* Exit status of status and stream for a job that ended: non-zero unless it succeeded. */
static int failed_status(const struct bai_jobinfo *ji)
{
    const char *e = bai_job_execution_state(ji);
    return strcmp(e, "failed") == 0 || strcmp(e, "cancelled") == 0 || strcmp(e, "terminated") == 0;
}

/* The job's outputs beside its stdouterr, once made: outputDirectories, and an Azure ML job's ./outputs and
 * ./logs (azureml_plan.c). */
static void aml_outputs(const char *stdouterr)
{
    char up[PATH_MAX], path[PATH_MAX + 16];
    const char *slash = strrchr(stdouterr, '/');
    struct stat st;

    if (!slash || strcmp(slash, "/stdouterr") != 0)
        return;
    snprintf(up, sizeof up, "%.*s", (int)(slash - stdouterr), stdouterr);
    snprintf(path, sizeof path, "%s/outputs", up);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        printf("outputs:          %s\n", path);
    snprintf(path, sizeof path, "%s/logs", up);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        printf("logs:             %s\n", path);
}

static int cmd_status(const char *jobid, bool json)
{
    struct bai_jobinfo ji;
    int rc = need_job(jobid, &ji);
    if (rc)
        return rc;
    cJSON *o = status_object(&ji);
    if (!o) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return 1;
    }
    if (json) {
        char *s = cJSON_Print(o);
        if (s)
            puts(s);
        free(s);
    } else {
        const cJSON *info = cJSON_GetObjectItemCaseSensitive(o, "executionInfo"),
                    *lr = cJSON_GetObjectItemCaseSensitive(o, "lastRequeue"),
                    *errs = cJSON_GetObjectItemCaseSensitive(info, "errors"), *e;
        printf("jobId:            %s\n", ji.id);
        printf("name:             %s\n", ji.name);
        printf("executionState:   %s\n", bai_job_execution_state(&ji));
        printf("slurmState:       %s\n", ji.state);
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "pendingReason")))
            printf("pendingReason:    %s\n", str_or(o, "pendingReason", ""));
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "experiment")))
            printf("experiment:       %s\n", str_or(o, "experiment", ""));
        printf("nodeCount:        %g\n", cJSON_GetObjectItemCaseSensitive(o, "nodeCount")->valuedouble);
        if (ji.node_list[0])
            printf("nodes:            %s\n", ji.node_list);
        /* Slurm shows 0:0 until the job ends. */
        printf("exitCode:         %s\n", strcmp(bai_job_execution_state(&ji), "cancelled") == 0 ? "none (never ran)"
                                       : !bai_job_ended(&ji) ? "none yet (it has not ended)" : ji.exit_code);
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(info, "startTime")))
            printf("startTime:        %s\n", str_or(info, "startTime", ""));
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(info, "endTime")))
            printf("endTime:          %s\n", str_or(info, "endTime", ""));
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "stdOutErrPath"))) {
            printf("stdOutErrPath:    %s\n", str_or(o, "stdOutErrPath", ""));
            aml_outputs(str_or(o, "stdOutErrPath", ""));
        }
        printf("attempt:          %d\n", cJSON_GetObjectItemCaseSensitive(o, "attempt")->valueint);
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "checkpoint")))
            printf("checkpoint:       %s\n", str_or(o, "checkpoint", ""));
        if (cJSON_IsObject(lr))
            printf("lastRequeue:      attempt %d ended: %s\n", cJSON_GetObjectItemCaseSensitive(lr, "attempt")->valueint,
                   str_or(lr, "ended", ""));
        cJSON_ArrayForEach(e, errs)
            printf("error:            %s: %s\n", str_or(e, "code", ""), str_or(e, "message", ""));
        if (ji.from_accounting)
            printf("source:           accounting (slurmctld has forgotten the job)\n");
    }
    cJSON_Delete(o);
    return failed_status(&ji);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* The log directory of a job that has one yet; a queued job's is made when it starts. */
static int job_dir(const struct bai_jobinfo *ji, char *dir, size_t size)
{
    if (strcmp(bai_job_execution_state(ji), "queued") == 0 || strcmp(bai_job_execution_state(ji), "cancelled") == 0) {
        fprintf(stderr, "batchai-job: job %s is %s: its log directory is made when it starts\n", ji->id,
                bai_job_execution_state(ji));
        return 1;
    }
    if (!bai_job_log_dir(ji, dir, size)) {
        fprintf(stderr, "batchai-job: job %s has no log directory Slurm still knows\n", ji->id);
        return 1;
    }
    return 0;
}

static int cmd_files(const char *jobid)
{
    struct bai_jobinfo ji;
    char dir[PATH_MAX];
    struct dirent **ents;
    int rc = need_job(jobid, &ji);
    if (rc || (rc = job_dir(&ji, dir, sizeof dir)))
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

/* Sleep between two questions to slurmctld: from 2 s up to 30 s (BATCHAI_JOB_POLL_MAX seconds, at least 2),
 * each waiter spread by its pid, so that many waiters never ask more often than every few seconds each. */
static unsigned next_poll_ms(unsigned prev_ms)
{
    const char *env = getenv("BATCHAI_JOB_POLL_MAX");
    long max_s = env && *env ? strtol(env, NULL, 10) : 30;
    unsigned max_ms = (unsigned)(max_s < 2 ? 2 : max_s > 3600 ? 3600 : max_s) * 1000;
    unsigned ms = prev_ms ? prev_ms * 3 / 2 : 2000;
    return (ms > max_ms ? max_ms : ms) + (unsigned)(getpid() % 500);
}

static int cmd_stream(const char *jobid, const char *file)
{
    struct bai_jobinfo ji;
    char dir[PATH_MAX], path[PATH_MAX * 2];
    int rc = need_job(jobid, &ji);
    if (rc)
        return rc;
    /* A queued job's log directory comes when it starts: wait for that, as the logs are what was asked, and
     * say so (on stderr: stdout is the file's). */
    if (strcmp(bai_job_execution_state(&ji), "queued") == 0)
        fprintf(stderr, "batchai-job: job %s is queued%s%s%s: waiting for it to start (Ctrl-C leaves; the job "
                "stays queued)\n", jobid, ji.reason[0] && strcmp(ji.reason, "None") != 0 ? " (" : "",
                ji.reason[0] && strcmp(ji.reason, "None") != 0 ? ji.reason : "",
                ji.reason[0] && strcmp(ji.reason, "None") != 0 ? ")" : "");
    for (unsigned ms = 0; strcmp(bai_job_execution_state(&ji), "queued") == 0;) {
        char why[1024];
        usleep((ms = next_poll_ms(ms)) * 1000);
        if (bai_job_load(jobid, &ji, why, sizeof why) != 0) {
            fprintf(stderr, "batchai-job: %s\n", why);
            return 1;
        }
    }
    if ((rc = job_dir(&ji, dir, sizeof dir)))
        return rc;
    if (strchr(file, '/') || strcmp(file, "..") == 0 || strcmp(file, ".") == 0) {
        fprintf(stderr, "batchai-job: '%s' is not a file name of the log directory\n", file);
        return 2;
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    long off = 0;
    /* The file is read often (a local read); Slurm is asked at most every second. */
    for (unsigned tick = 0;; tick++) {
        off = pump(path, off);
        char why[1024];
        if (tick % 4 == 3 && (bai_job_load(jobid, &ji, why, sizeof why) != 0 || bai_job_ended(&ji))) {
            off = pump(path, off); /* what was written between the last read and the end */
            break;
        }
        usleep(250 * 1000);
    }
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "batchai-job: %s: no such file in the job's log directory\n", file);
        return 1;
    }
    return failed_status(&ji);
}

/* Until the job ended for good: a requeued job is queued again, not ended. Exit status: the job's own. */
static int cmd_wait(const char *jobid, long timeout_s)
{
    struct bai_jobinfo ji;
    char why[1024];
    int rc = need_job(jobid, &ji);
    if (rc)
        return rc;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned ms = 0; !bai_job_ended(&ji);) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long waited_ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (timeout_s >= 0 && waited_ms >= timeout_s * 1000) {
            printf("job %s: still %s after %ld s (--timeout)\n", jobid, bai_job_execution_state(&ji), timeout_s);
            return 124;
        }
        ms = next_poll_ms(ms);
        if (timeout_s >= 0 && waited_ms + ms > timeout_s * 1000)
            ms = (unsigned)(timeout_s * 1000 - waited_ms);
        usleep(ms * 1000);
        if (bai_job_load(jobid, &ji, why, sizeof why) != 0) {
            fprintf(stderr, "batchai-job: %s\n", why);
            return 1;
        }
    }
    const char *e = bai_job_execution_state(&ji);
    long restarts = ji.restarts[0] ? strtol(ji.restarts, NULL, 10) : 0;
    int code = bai_job_exit_status(&ji);
    if (strcmp(e, "cancelled") == 0) {
        printf("job %s: cancelled (Slurm state %s) before it ran\n", jobid, ji.state);
        return 1;
    }
    printf("job %s: %s (Slurm state %s, exit code %s, attempt %ld)\n", jobid, e, ji.state, ji.exit_code, restarts + 1);
    if ((strcmp(e, "failed") == 0 || strcmp(e, "terminated") == 0) && code <= 0)
        return 1;
    return code < 0 ? 1 : code > 255 ? 255 : code;
}

/* `scontrol -o show node NAMES`, one record per node: name, address, state. */
static cJSON *node_objects(const struct bai_jobinfo *ji, const char *dir)
{
    cJSON *arr = cJSON_CreateArray();
    if (!ji->node_list[0])
        return arr;
    char *argv[] = {"scontrol", "-o", "show", "node", (char *)ji->node_list, NULL};
    char *out, *err;
    int st = bai_run(argv, &out, &err);
    struct bai_record *rec = malloc(sizeof *rec);
    long attempt = (ji->restarts[0] ? strtol(ji->restarts, NULL, 10) : 0) + 1;
    for (char *save = NULL, *line = st == 0 && out && rec ? strtok_r(out, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        bai_record_parse(rec, line, bai_node_keys);
        cJSON *n = cJSON_CreateObject();
        const char *name = bai_record_get(rec, "NodeName");
        cJSON_AddStringToObject(n, "name", name);
        cJSON_AddStringToObject(n, "address", bai_record_get(rec, "NodeAddr"));
        cJSON_AddStringToObject(n, "state", bai_record_get(rec, "State"));
        /* The preparation's end for this attempt, from the node's execution log (render.c). */
        char path[PATH_MAX + 300], line2[1024], tag[96], result[256] = "";
        snprintf(tag, sizeof tag, " attempt %ld: job preparation finished with exit code ", attempt);
        snprintf(path, sizeof path, "%s/execution-%s.log", dir, name);
        struct stat sst;
        FILE *f = dir[0] && lstat(path, &sst) == 0 && S_ISREG(sst.st_mode) ? fopen(path, "re") : NULL;
        while (f && fgets(line2, sizeof line2, f)) {
            char *p = strstr(line2, tag);
            if (p)
                snprintf(result, sizeof result, "%.*s", (int)strcspn(p + strlen(tag), "\n"), p + strlen(tag));
        }
        if (f)
            fclose(f);
        if (result[0])
            cJSON_AddNumberToObject(n, "preparationExitCode", strtod(result, NULL));
        else
            cJSON_AddNullToObject(n, "preparationExitCode");
        cJSON_AddItemToArray(arr, n);
    }
    free(rec);
    free(out);
    free(err);
    return arr;
}

static int cmd_nodes(const char *jobid, bool json)
{
    struct bai_jobinfo ji;
    char dir[PATH_MAX] = "";
    int rc = need_job(jobid, &ji);
    if (rc)
        return rc;
    if (!ji.node_list[0]) {
        bool why = ji.reason[0] && strcmp(ji.reason, "None") != 0;
        fprintf(stderr, "batchai-job: job %s is %s: it holds no nodes%s%s%s\n", jobid, bai_job_execution_state(&ji),
                why ? " (" : "", why ? ji.reason : "", why ? ")" : "");
        return 1;
    }
    bai_job_log_dir(&ji, dir, sizeof dir);
    cJSON *arr = node_objects(&ji, dir), *n;
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "jobId", ji.id);
        cJSON_AddNumberToObject(o, "attempt", (double)(ji.restarts[0] ? strtol(ji.restarts, NULL, 10) : 0) + 1);
        cJSON_AddItemToObject(o, "nodes", arr);
        char *s = cJSON_Print(o);
        if (s)
            puts(s);
        free(s);
        cJSON_Delete(o);
        return 0;
    }
    printf("%-20s %-20s %-16s %s\n", "Name", "Address", "State", "Preparation");
    cJSON_ArrayForEach(n, arr) {
        const cJSON *prep = cJSON_GetObjectItemCaseSensitive(n, "preparationExitCode");
        char p[64];
        if (cJSON_IsNumber(prep))
            snprintf(p, sizeof p, "exit code %d", prep->valueint);
        else
            snprintf(p, sizeof p, "none logged");
        printf("%-20s %-20s %-16s %s\n", str_or(n, "name", ""), str_or(n, "address", ""), str_or(n, "state", ""), p);
    }
    cJSON_Delete(arr);
    return 0;
}

static bool take_flag(int *argc, char **argv, const char *flag)
{
    for (int i = 0; i < *argc; i++)
        if (strcmp(argv[i], flag) == 0) {
            memmove(argv + i, argv + i + 1, (size_t)(*argc - i) * sizeof *argv);
            (*argc)--;
            return true;
        }
    return false;
}

int bai_monitor_main(const char *cmd, int argc, char **argv)
{
    bool json = take_flag(&argc, argv, "--json");
    if (strcmp(cmd, "stream") == 0 && (argc == 1 || argc == 2) && !json)
        return cmd_stream(argv[0], argc == 2 ? argv[1] : "stdout.txt");
    if (strcmp(cmd, "wait") == 0 && !json) {
        long timeout = -1;
        if (argc == 3 && strcmp(argv[1], "--timeout") == 0) {
            char *end;
            timeout = strtol(argv[2], &end, 10);
            if (*end || timeout < 0) {
                fprintf(stderr, "batchai-job wait: --timeout wants seconds, not '%s'\n", argv[2]);
                return 2;
            }
            argc = 1;
        }
        if (argc == 1)
            return cmd_wait(argv[0], timeout);
    }
    if (argc == 1 && strcmp(cmd, "status") == 0)
        return cmd_status(argv[0], json);
    if (argc == 1 && strcmp(cmd, "nodes") == 0)
        return cmd_nodes(argv[0], json);
    if (argc == 1 && strcmp(cmd, "files") == 0 && !json)
        return cmd_files(argv[0]);
    fprintf(stderr, "usage: batchai-job %s JOBID%s\n", cmd,
            strcmp(cmd, "stream") == 0   ? " [FILE]"
            : strcmp(cmd, "wait") == 0   ? " [--timeout SECONDS]"
            : strcmp(cmd, "status") == 0 || strcmp(cmd, "nodes") == 0 ? " [--json]"
                                         : "");
    return 2;
}
