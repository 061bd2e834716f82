/* batchai-job for sweep jobs: see sweep_cmd.h. */
#include "sweep_cmd.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "graph_file.h"
#include "job_control.h"
#include "jobfile/batchai_jobfile.h"
#include "slurm_job.h"
#include "slurm_read.h"

struct opened {
    struct bai_sweep s;
    char file[PATH_MAX], base[PATH_MAX], trial[PATH_MAX + 16];
};

bool bai_sweep_file(const char *path)
{
    return bai_graph_file_is(path, bai_sweep_detect);
}

static int open_sweep(const struct bai_pipeline_opts *o, const char *path, uint64_t seed, struct opened *op)
{
    struct bai_diag d = { 0 };
    char prefix[PATH_MAX + 8];
    char *text = NULL;
    size_t len = 0;
    int rc = -1;

    if (bai_graph_paths(path, o->name, op->file, sizeof op->file, op->base, sizeof op->base) != 0)
        return -1;
    snprintf(op->trial, sizeof op->trial, "%s/trial.json", op->base);
    if (bai_job_read(path, &text, &len, &d) == 0)
        rc = bai_sweep_parse(text, len, op->file, seed, &op->s, &d);
    free(text);
    snprintf(prefix, sizeof prefix, "%s: ", path);
    bai_diag_print(&d, stderr, prefix);
    bai_diag_free(&d);
    return rc;
}

/* The trial opened as the plugin opens its file; faults as "PATH: trial: ...". */
static int open_trial(const struct bai_pipeline_opts *o, const char *path, const struct opened *op, char **text,
                      struct bai_opened *out)
{
    struct bai_diag d = { 0 };
    char prefix[PATH_MAX + 16];
    *text = cJSON_Print(op->s.trial);
    if (!*text) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return -1;
    }
    struct bai_job_reader reader = { bai_text_read, *text };
    struct bai_job_source src = { .path = op->trial, .job_file = op->trial, .job_name = "trial",
                                  .user_shares = o->shares };
    int rc = bai_job_open(&src, o->site, o->level, &reader, out, &d);
    snprintf(prefix, sizeof prefix, "%s: trial: ", path);
    bai_diag_print(&d, stderr, prefix);
    bai_diag_free(&d);
    return rc;
}

/* The seed of a sweep without one: recorded in its record and printed, so the same trials can be had again. */
int bai_sweep_validate(const struct bai_pipeline_opts *o, const char *path)
{
    struct opened op;
    struct bai_opened so;
    char *text = NULL;
    if (open_sweep(o, path, 0, &op) != 0)
        return 1;
    int rc = open_trial(o, path, &op, &text, &so);
    if (rc == 0) {
        printf("%s: valid (Azure ML sweep, %zu trials, at most %d at a time, %s sampling)\n", path, op.s.n_trials,
               op.s.max_concurrent, op.s.random ? "random" : "grid");
        bai_opened_free(&so);
    }
    free(text);
    bai_sweep_free(&op.s);
    return rc ? 1 : 0;
}

int bai_sweep_translate(const struct bai_pipeline_opts *o, const char *path)
{
    struct opened op;
    struct bai_opened so;
    char *text = NULL;
    if (open_sweep(o, path, 0, &op) != 0)
        return 1;
    int rc = open_trial(o, path, &op, &text, &so) == 0 ? 0 : 1;
    if (rc == 0) {
        char *script = bai_render_script(&so.plan);
        printf("# sbatch --array=0-%zu%%%d%s (seed 0 here; submit draws one unless the file gives it)\n",
               op.s.n_trials - 1, op.s.max_concurrent, op.s.timeout ? " --deadline=now+TIMEOUT" : "");
        fputs(script ? script : "", stdout);
        rc = script ? 0 : 1;
        free(script);
        bai_opened_free(&so);
    }
    free(text);
    bai_sweep_free(&op.s);
    return rc;
}

cJSON *bai_sweep_record(const struct bai_sweep *sw, const char *id, const char *file)
{
    cJSON *r = cJSON_CreateObject(), *trials = cJSON_AddArrayToObject(r, "trials");
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)sw->seed);
    cJSON_AddStringToObject(r, "sweepId", id);
    cJSON_AddStringToObject(r, "file", file);
    cJSON_AddStringToObject(r, "samplingAlgorithm", sw->random ? "random" : "grid");
    cJSON_AddStringToObject(r, "seed", seed);
    cJSON_AddStringToObject(r, "goal", sw->maximize ? "maximize" : "minimize");
    cJSON_AddStringToObject(r, "primaryMetric", sw->metric);
    cJSON_AddNumberToObject(r, "maxConcurrentTrials", sw->max_concurrent);
    for (size_t t = 0; t < sw->n_trials; t++) {
        cJSON *o = cJSON_CreateObject(), *p = cJSON_AddObjectToObject(o, "parameters");
        cJSON_AddNumberToObject(o, "index", (double)t);
        for (size_t k = 0; k < sw->n_params; k++)
            cJSON_AddStringToObject(p, sw->names[k], sw->values[t * sw->n_params + k]);
        cJSON_AddItemToArray(trials, o);
    }
    return r;
}

static char *record_text(const struct opened *op, const char *id)
{
    cJSON *r = bai_sweep_record(&op->s, id, op->file);
    char *text = cJSON_Print(r);
    cJSON_Delete(r);
    return text;
}

int bai_sweep_submit(const struct bai_pipeline_opts *o, const char *path, int argc, char **argv)
{
    struct opened op;
    struct bai_opened so;
    char *text = NULL, *array = NULL, *opt = NULL, *shares = NULL, *deadline = NULL;
    bool parsable = false;
    int rc = 1;

    char experiment[300] = "";
    for (int i = 0; i + 1 < argc; i++)
        if (strcmp(argv[i], "--experiment") == 0) {
            if (!argv[i + 1][0] || strpbrk(argv[i + 1], " \t\n") || strlen(argv[i + 1]) > 255) {
                fprintf(stderr, "batchai-job submit: --experiment wants a name without spaces, not '%s'\n", argv[i + 1]);
                return 2;
            }
            snprintf(experiment, sizeof experiment, "--comment=" BAI_EXPERIMENT_TAG "%s", argv[i + 1]);
        }
    for (int i = 0; i < argc; i++)
        if (strncmp(argv[i], "--array", 7) == 0 || strncmp(argv[i], "-a", 2) == 0 || strcmp(argv[i], "--wait") == 0) {
            fprintf(stderr, "batchai-job submit: %s: a sweep's array is its own (limits.max_total_trials and "
                    "max_concurrent_trials); follow it with `batchai-job wait ID`\n", argv[i]);
            return 2;
        }
    if (open_sweep(o, path, bai_graph_seed(), &op) != 0)
        return 1;
    if (open_trial(o, path, &op, &text, &so) != 0) {
        fprintf(stderr, "batchai-job submit: %s: nothing was submitted\n", path);
        goto out;
    }
    bai_opened_free(&so);
    if ((mkdir(op.base, 0755) != 0 && errno != EEXIST) || bai_write_file_atomic(op.trial, text) != 0) {
        fprintf(stderr, "batchai-job submit: %s: %s; nothing was submitted\n", op.trial, strerror(errno));
        goto out;
    }
    char **args = calloc((size_t)argc + 10, sizeof *args);
    if (!args || asprintf(&opt, "--batchai-job=%s", op.trial) < 0 ||
        asprintf(&array, "--array=0-%zu%%%d", op.s.n_trials - 1, op.s.max_concurrent) < 0 ||
        (o->shares && asprintf(&shares, "--batchai-share=%s", o->shares) < 0) ||
        (op.s.timeout && asprintf(&deadline, "--deadline=now+%ld", op.s.timeout) < 0)) {
        fprintf(stderr, "batchai-job: out of memory\n");
        free(args);
        goto out;
    }
    int k = 0;
    args[k++] = "sbatch";
    args[k++] = "--parsable";
    args[k++] = opt;
    args[k++] = "--batchai-name=trial";
    args[k++] = array;
    if (shares)
        args[k++] = shares;
    if (deadline) {
        /* The whole sweep's limit: a trial that starts late gets the time left before the deadline (down to
         * a minute) instead of being removed for a time limit that would pass it. */
        args[k++] = deadline;
        args[k++] = "--time-min=1";
    }
    for (int j = 0; j < argc; j++)
        if (strcmp(argv[j], "--parsable") == 0)
            parsable = true;
        else if (strcmp(argv[j], "--experiment") == 0 && j + 1 < argc)
            args[k++] = experiment, j++; /* as submit records it for one job */
        else
            args[k++] = argv[j];
    char *out = NULL, *err = NULL;
    int st = bai_run(args, &out, &err);
    free(args);
    long id = st == 0 && out ? strtol(out, NULL, 10) : 0;
    if (id <= 0) {
        fprintf(stderr, "batchai-job submit: %s: sbatch failed: %s\n", path, err && err[0] ? err : out ? out : "");
        free(out);
        free(err);
        goto out;
    }
    free(out);
    free(err);
    char ids[32], record[PATH_MAX + 64];
    snprintf(ids, sizeof ids, "%ld", id);
    snprintf(record, sizeof record, "%s/sweep-%s.json", op.base, ids);
    char *rtext = record_text(&op, ids);
    if (!rtext || bai_write_file_atomic(record, rtext) != 0) {
        /* Without its record the sweep cannot be followed: nothing half-submitted. */
        char *cancel[] = { "scancel", ids, NULL };
        fprintf(stderr, "batchai-job submit: %s: %s; the sweep's array %s is cancelled\n", record,
                rtext ? strerror(errno) : "out of memory", ids);
        (void)bai_run(cancel, &out, &err);
        free(rtext);
        goto out;
    }
    free(rtext);
    if (parsable)
        printf("%s\n", ids);
    else
        printf("Submitted sweep %s (%zu trials, at most %d at a time, %s sampling, seed %llu)\n", ids, op.s.n_trials,
               op.s.max_concurrent, op.s.random ? "random" : "grid", (unsigned long long)op.s.seed);
    rc = 0;
out:
    free(text);
    free(opt);
    free(array);
    free(shares);
    free(deadline);
    bai_sweep_free(&op.s);
    return rc;
}

/* ---- operating a sweep ---- */

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The record of sweep `id` and BASE, from its task 0's log directory (BASE/trial/<job id>/stdouterr). */
static cJSON *load_record(const char *id, char *base, size_t size, char *record, size_t record_size)
{
    struct bai_jobinfo ji;
    char why[1024], task0[48], path[PATH_MAX + 64];
    /* Task 0's log directory, else the array's own record's: Slurm 23.02 and later keep no record of a task
     * cancelled while it was queued, and the array's record then holds the others. */
    if (strchr(id, '_') || snprintf(task0, sizeof task0, "%s_0", id) >= (int)sizeof task0 ||
        ((bai_job_load(task0, &ji, why, sizeof why) != 0 || bai_stdout_path(&ji, path, sizeof path) != 0) &&
         (bai_job_load(id, &ji, why, sizeof why) != 0 || bai_stdout_path(&ji, path, sizeof path) != 0)))
        return NULL;
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(path, '/');
        if (!slash || slash == path)
            return NULL;
        *slash = '\0';
    }
    if (snprintf(base, size, "%s", path) >= (int)size)
        return NULL;
    size_t n = strlen(path);
    snprintf(path + n, sizeof path - n, "/sweep-%s.json", id);
    snprintf(record, record_size, "%s", path);
    cJSON *r = bai_read_json(path, NULL);
    if (strcmp(str(r, "sweepId"), id) != 0 || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "trials"))) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

/* The last value of metric `name` in the MLflow file store `store` (mlruns/<experiment>/<run>/metrics/<name>,
 * each line "timestamp value step"); false when no run logged it. */
static bool metric_value(const char *store, const char *name, double *value)
{
    DIR *exps = opendir(store);
    struct dirent *e, *r;
    bool found = false;
    while (exps && (e = readdir(exps)) != NULL) {
        char dir[PATH_MAX];
        if (e->d_name[0] == '.' || snprintf(dir, sizeof dir, "%s/%s", store, e->d_name) >= (int)sizeof dir)
            continue;
        DIR *runs = opendir(dir);
        while (runs && (r = readdir(runs)) != NULL) {
            char file[PATH_MAX * 2], line[256];
            struct stat st;
            if (r->d_name[0] == '.')
                continue;
            snprintf(file, sizeof file, "%s/%s/metrics/%s", dir, r->d_name, name);
            FILE *f = lstat(file, &st) == 0 && S_ISREG(st.st_mode) ? fopen(file, "re") : NULL;
            while (f && fgets(line, sizeof line, f)) {
                double ts, v;
                if (sscanf(line, "%lf %lf", &ts, &v) == 2) {
                    *value = v;
                    found = true;
                }
            }
            if (f)
                fclose(f);
        }
        if (runs)
            closedir(runs);
    }
    if (exps)
        closedir(exps);
    return found;
}

/* Whether trial `index` is among those the record says terminate cancelled while they were queued. */
static bool cancelled_queued(const cJSON *r, int index)
{
    const cJSON *i;
    cJSON_ArrayForEach(i, cJSON_GetObjectItemCaseSensitive(r, "cancelledQueued"))
        if (cJSON_IsNumber(i) && i->valueint == index)
            return true;
    return false;
}

cJSON *bai_sweep_status(const cJSON *r, const char *trials_dir, bool *ended, int *first_fail)
{
    cJSON *o = cJSON_CreateObject(), *trials = cJSON_CreateArray();
    const cJSON *t;
    bool maximize = strcmp(str(r, "goal"), "maximize") == 0;
    int best = -1, failed = 0, running = 0, queued = 0, stopped = 0, unknown = 0;
    double best_v = 0;

    *ended = true;
    *first_fail = 0;
    cJSON_AddStringToObject(o, "sweepId", str(r, "sweepId"));
    cJSON_AddStringToObject(o, "file", str(r, "file"));
    cJSON_AddStringToObject(o, "samplingAlgorithm", str(r, "samplingAlgorithm"));
    cJSON_AddStringToObject(o, "seed", str(r, "seed"));
    cJSON_AddStringToObject(o, "goal", str(r, "goal"));
    cJSON_AddStringToObject(o, "primaryMetric", str(r, "primaryMetric"));
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(r, "trials")) {
        int index = cJSON_GetObjectItemCaseSensitive(t, "index")->valueint;
        char task[64], why[1024], store[PATH_MAX * 2];
        struct bai_jobinfo ji;
        cJSON *x = cJSON_CreateObject();
        snprintf(task, sizeof task, "%s_%d", str(r, "sweepId"), index);
        cJSON_AddNumberToObject(x, "index", index);
        cJSON_AddItemToObject(x, "parameters",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "parameters"), 1));
        if (bai_job_load(task, &ji, why, sizeof why) != 0) {
            bool cancelled = cancelled_queued(r, index);
            cJSON_AddNullToObject(x, "jobId");
            cJSON_AddStringToObject(x, "executionState", cancelled ? "cancelled" : "unknown");
            cJSON_AddNullToObject(x, "exitCode");
            cJSON_AddNullToObject(x, "metric");
            cJSON_AddItemToArray(trials, x);
            stopped += cancelled;
            unknown += !cancelled;
            continue;
        }
        const char *e = bai_job_execution_state(&ji);
        int code = bai_job_exit_status(&ji);
        /* A task not split off yet is shown under the array's id. */
        cJSON_AddStringToObject(x, "jobId", ji.id);
        cJSON_AddStringToObject(x, "executionState", e);
        if (bai_job_ended(&ji) && strcmp(e, "cancelled") != 0 && code >= 0)
            cJSON_AddNumberToObject(x, "exitCode", code);
        else
            cJSON_AddNullToObject(x, "exitCode");
        *ended = *ended && bai_job_ended(&ji);
        running += strcmp(e, "running") == 0 || strcmp(e, "terminating") == 0;
        queued += strcmp(e, "queued") == 0;
        /* terminate (terminated) or scancel (cancelled) stopped it: the sweep did not succeed. */
        stopped += strcmp(e, "terminated") == 0 || strcmp(e, "cancelled") == 0;
        if ((strcmp(e, "failed") == 0 || strcmp(e, "terminated") == 0) && !*first_fail)
            *first_fail = code > 0 ? (code > 255 ? 255 : code) : 1;
        failed += strcmp(e, "failed") == 0;
        double v;
        snprintf(store, sizeof store, "%s/%s/outputs/mlruns", trials_dir, ji.id);
        if (strcmp(e, "queued") != 0 && metric_value(store, str(r, "primaryMetric"), &v)) {
            cJSON_AddNumberToObject(x, "metric", v);
            if (best < 0 || (maximize ? v > best_v : v < best_v)) {
                best = index;
                best_v = v;
            }
        } else
            cJSON_AddNullToObject(x, "metric");
        cJSON_AddItemToArray(trials, x);
    }
    /* A trial Slurm no longer knows (forgotten without accounting, or cancelled while queued by a plain scancel
     * on 23.02 and later) leaves the sweep unknown, not succeeded. */
    cJSON_AddStringToObject(o, "executionState", !*ended ? (running || !queued ? "running" : "queued")
                                                 : failed ? "failed" : stopped ? "cancelled"
                                                 : unknown ? "unknown" : "succeeded");
    cJSON_AddItemToObject(o, "trials", trials);
    if (best >= 0)
        cJSON_AddNumberToObject(o, "bestTrial", best);
    else
        cJSON_AddNullToObject(o, "bestTrial");
    return o;
}

static int cmd_status(const cJSON *r, const char *base, bool json)
{
    bool ended;
    int fail;
    char dir[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/trial", base);
    cJSON *o = bai_sweep_status(r, dir, &ended, &fail), *t, *p;
    if (json) {
        char *text = cJSON_Print(o);
        if (text)
            puts(text);
        free(text);
    } else {
        const cJSON *best = cJSON_GetObjectItemCaseSensitive(o, "bestTrial");
        printf("sweepId:          %s\n", str(o, "sweepId"));
        printf("executionState:   %s\n", str(o, "executionState"));
        printf("sampling:         %s (seed %s)\n", str(o, "samplingAlgorithm"), str(o, "seed"));
        printf("objective:        %s %s\n", str(o, "goal"), str(o, "primaryMetric"));
        printf("%-6s %-10s %-12s %-6s %-14s %s\n", "Trial", "JobId", "State", "Exit", "Metric", "Parameters");
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(o, "trials")) {
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(t, "exitCode"),
                        *m = cJSON_GetObjectItemCaseSensitive(t, "metric");
            char exit[16] = "-", metric[32] = "-", params[512] = "";
            if (cJSON_IsNumber(code))
                snprintf(exit, sizeof exit, "%d", code->valueint);
            if (cJSON_IsNumber(m))
                snprintf(metric, sizeof metric, "%.6g", m->valuedouble);
            cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(t, "parameters"))
                snprintf(params + strlen(params), sizeof params - strlen(params), "%s%s=%s", params[0] ? " " : "",
                         p->string, p->valuestring);
            printf("%-6d %-10s %-12s %-6s %-14s %s\n", cJSON_GetObjectItemCaseSensitive(t, "index")->valueint,
                   str(t, "jobId"), str(t, "executionState"), exit, metric, params);
        }
        if (cJSON_IsNumber(best))
            printf("best:             trial %d (%s %s)\n", best->valueint, str(o, "goal"), str(o, "primaryMetric"));
        else
            printf("best:             none yet (no trial logged %s)\n", str(o, "primaryMetric"));
    }
    const char *e = str(o, "executionState");
    int rc = strcmp(e, "failed") == 0 || strcmp(e, "cancelled") == 0 || strcmp(e, "unknown") == 0;
    cJSON_Delete(o);
    return rc;
}

/* Add the trials still queued to the record's cancelledQueued: Slurm 23.02 and later keep no record of a task
 * cancelled while it was queued, and status then says cancelled, not unknown. */
static void mark_cancelled_queued(const char *record, const cJSON *trials)
{
    cJSON *r = bai_read_json(record, NULL), *t;
    cJSON *list = cJSON_GetObjectItemCaseSensitive(r, "cancelledQueued");
    if (r && !cJSON_IsArray(list)) {
        cJSON_DeleteItemFromObjectCaseSensitive(r, "cancelledQueued");
        list = cJSON_AddArrayToObject(r, "cancelledQueued");
    }
    bool ok = list != NULL;
    cJSON_ArrayForEach(t, trials) {
        int index = cJSON_GetObjectItemCaseSensitive(t, "index")->valueint;
        if (ok && strcmp(str(t, "executionState"), "queued") == 0 && !cancelled_queued(r, index))
            ok = cJSON_AddItemToArray(list, cJSON_CreateNumber(index));
    }
    char *out = ok ? cJSON_Print(r) : NULL;
    if (!out || bai_write_file_atomic(record, out) != 0)
        fprintf(stderr, "batchai-job terminate: cannot record the trials cancelled while queued in %s (%s): status "
                "may call them unknown\n", record, out ? strerror(errno) : "unreadable or out of memory");
    free(out);
    cJSON_Delete(r);
}

int bai_sweep_stop(const char *array, const char *record, const cJSON *trials, int argc, char **argv)
{
    int rc = 0;
    /* The trials still waiting first: a slot that a stopping trial frees must not start one. */
    if (bai_scancel(array, "PENDING") != 0)
        rc = 1;
    else
        mark_cancelled_queued(record, trials);
    const cJSON *t;
    cJSON_ArrayForEach(t, trials) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "jobId");
        if (!cJSON_IsString(id) || strcmp(str(t, "executionState"), "running") != 0)
            continue;
        char *args[4] = { id->valuestring, argc > 1 ? argv[1] : NULL, argc > 2 ? argv[2] : NULL, NULL };
        if (bai_job_control_main("terminate", argc, args) != 0)
            rc = 1;
    }
    if (bai_scancel(array, NULL) != 0)
        rc = 1;
    return rc;
}

int bai_sweep_control(const char *cmd, int argc, char **argv)
{
    char base[PATH_MAX];
    if (argc < 1 || argv[0][0] == '-')
        return -1;
    char record[PATH_MAX + 64];
    cJSON *r = load_record(argv[0], base, sizeof base, record, sizeof record);
    if (!r)
        return -1;
    int rc = -1;
    if (strcmp(cmd, "status") == 0 && (argc == 1 || (argc == 2 && strcmp(argv[1], "--json") == 0)))
        rc = cmd_status(r, base, argc == 2);
    else if (strcmp(cmd, "list") == 0 && argc == 1)
        rc = cmd_status(r, base, false) >= 0 ? 0 : 1;
    else if (strcmp(cmd, "wait") == 0 && (argc == 1 || (argc == 3 && strcmp(argv[1], "--timeout") == 0))) {
        long timeout = argc == 3 ? strtol(argv[2], NULL, 10) : -1;
        time_t t0 = time(NULL);
        for (unsigned ms = 1000;; ms = ms < 10000 ? ms * 3 / 2 : ms) {
            bool ended;
            int fail;
            char dir[PATH_MAX + 8];
            snprintf(dir, sizeof dir, "%s/trial", base);
            cJSON *o = bai_sweep_status(r, dir, &ended, &fail);
            if (ended) {
                const cJSON *best = cJSON_GetObjectItemCaseSensitive(o, "bestTrial");
                printf("sweep %s: %s", argv[0], str(o, "executionState"));
                if (cJSON_IsNumber(best))
                    printf(", best trial %d", best->valueint);
                printf("\n");
                rc = strcmp(str(o, "executionState"), "succeeded") == 0 ? 0 : fail ? fail : 1;
                cJSON_Delete(o);
                break;
            }
            cJSON_Delete(o);
            if (timeout >= 0 && time(NULL) - t0 >= timeout) {
                printf("sweep %s: not ended after %ld s (--timeout)\n", argv[0], timeout);
                rc = 124;
                break;
            }
            usleep(ms * 1000);
        }
    } else if (strcmp(cmd, "terminate") == 0) {
        bool ended;
        int fail;
        char dir[PATH_MAX + 8];
        snprintf(dir, sizeof dir, "%s/trial", base);
        cJSON *o = bai_sweep_status(r, dir, &ended, &fail);
        rc = bai_sweep_stop(argv[0], record, cJSON_GetObjectItemCaseSensitive(o, "trials"), argc, argv);
        cJSON_Delete(o);
        printf("sweep %s: terminated\n", argv[0]);
    } else if (strcmp(cmd, "nodes") == 0 || strcmp(cmd, "files") == 0 || strcmp(cmd, "stream") == 0 ||
               strcmp(cmd, "exec") == 0) {
        /* Slurm would take the array's id for whichever task holds the array's own record, the last one started:
         * never what was meant. */
        fprintf(stderr, "batchai-job %s: %s is a sweep of %d trials, each a job of its own: give one, as %s_0 "
                "(batchai-job status %s lists them)\n", cmd, argv[0],
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "trials")), argv[0], argv[0]);
        rc = 2;
    }
    cJSON_Delete(r);
    return rc;
}
