/* batchai-job for pipeline jobs: see pipeline_cmd.h. The graph comes from jobfile/batchai_jobfile.h; every step is
 * checked as the plugin checks a command job (bai_job_open) before the first sbatch, and submitted through
 * sbatch and the plugin like any job. */
#include "pipeline_cmd.h"

#include <cJSON.h>
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
#include "sweep_cmd.h"

/* A pipeline opened: the graph, and BASE (pipeline_cmd.h). */
struct opened {
    struct bai_pipeline p;
    char file[PATH_MAX], base[PATH_MAX];
};

bool bai_pipeline_file(const char *path)
{
    return bai_graph_file_is(path, bai_pipeline_detect);
}

static int open_pipeline(const struct bai_pipeline_opts *o, const char *path, uint64_t seed, struct opened *op)
{
    struct bai_diag d = { 0 };
    char prefix[PATH_MAX + 8];
    char *text = NULL;
    size_t len = 0;
    int rc = -1;

    if (bai_graph_paths(path, o->name, op->file, sizeof op->file, op->base, sizeof op->base) != 0)
        return -1;
    if (bai_job_read(path, &text, &len, &d) == 0)
        rc = bai_pipeline_parse(text, len, op->file, o->site, seed, &op->p, &d);
    free(text);
    snprintf(prefix, sizeof prefix, "%s: ", path);
    bai_diag_print(&d, stderr, prefix);
    bai_diag_free(&d);
    return rc;
}

/* Step i opened as the plugin opens its file, faults printed as "PATH: jobs.S: ...". */
static int open_step(const struct bai_pipeline_opts *o, const char *path, const struct opened *op, size_t i,
                     const char *const ids[], struct bai_opened *out)
{
    const struct bai_pl_step *s = &op->p.steps[i];
    struct bai_diag d = { 0 };
    char file[PATH_MAX + 80], prefix[PATH_MAX + 300];
    char *text = bai_pipeline_step_text(&op->p, i, op->base, ids);
    if (!text) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return -1;
    }
    snprintf(file, sizeof file, "%s/%s.json", op->base, s->name);
    struct bai_job_reader reader = { bai_text_read, text };
    struct bai_job_source src = { .path = file, .job_file = file, .job_name = s->name, .user_shares = o->shares };
    int rc = bai_job_open(&src, o->site, o->level, &reader, out, &d);
    snprintf(prefix, sizeof prefix, "%s: %s: ", path, s->yaml_path);
    bai_diag_print(&d, stderr, prefix);
    bai_diag_free(&d);
    free(text);
    return rc;
}

/* Every step under job ids not known yet ("0"): what validate and translate show. */
static const char *placeholder(size_t i)
{
    (void)i;
    return "0";
}

static int check_all(const struct bai_pipeline_opts *o, const char *path, const struct opened *op)
{
    const char *ids[BAI_PIPELINE_MAX_STEPS];
    int bad = 0;
    for (size_t i = 0; i < op->p.n_steps; i++)
        ids[i] = placeholder(i);
    for (size_t i = 0; i < op->p.n_steps; i++) {
        struct bai_opened so;
        if (open_step(o, path, op, i, ids, &so) != 0)
            bad++;
        else
            bai_opened_free(&so);
    }
    return bad;
}

int bai_pipeline_validate(const struct bai_pipeline_opts *o, const char *path)
{
    struct opened op;
    if (open_pipeline(o, path, 0, &op) != 0)
        return 1;
    int bad = check_all(o, path, &op);
    if (!bad)
        printf("%s: valid (Azure ML pipeline, %zu step%s)\n", path, op.p.n_steps, op.p.n_steps == 1 ? "" : "s");
    bai_pipeline_free(&op.p);
    return bad ? 1 : 0;
}

static void print_deps(FILE *f, const struct bai_pipeline *p, size_t i, const char *sep)
{
    for (size_t k = 0; k < p->steps[i].n_deps; k++)
        fprintf(f, "%s%s", k ? sep : "", p->steps[p->steps[i].deps[k]].name);
}

int bai_pipeline_translate(const struct bai_pipeline_opts *o, const char *path)
{
    struct opened op;
    const char *ids[BAI_PIPELINE_MAX_STEPS];
    int rc = 0;

    if (open_pipeline(o, path, 0, &op) != 0)
        return 1;
    for (size_t i = 0; i < op.p.n_steps; i++)
        ids[i] = placeholder(i);
    for (size_t i = 0; i < op.p.n_steps && rc == 0; i++) {
        struct bai_opened so;
        if (open_step(o, path, &op, i, ids, &so) != 0) {
            rc = 1;
            continue;
        }
        char *script = bai_render_script(&so.plan);
        printf("# ---- step %s (%s/%s.json), after: ", op.p.steps[i].name, op.base, op.p.steps[i].name);
        print_deps(stdout, &op.p, i, ", ");
        if (op.p.steps[i].n_deps)
            printf("; sbatch --dependency=%s:<their job ids>; the job id 0 in paths is the producer's, known at "
                   "submission\n", op.p.continue_on_step_failure ? "afterany" : "afterok");
        else
            printf("none\n");
        const struct bai_sweep *sw = op.p.steps[i].sweep;
        if (sw)
            printf("# a sweep: sbatch --array=0-%zu%%%d%s (seed 0 here; submit draws one unless the step gives it); "
                   "then its best trial's outputs: sbatch --dependency=afterany:<the array> batchai-job sweep-best, "
                   "which the steps after it wait for\n", sw->n_trials - 1, sw->max_concurrent,
                   sw->timeout ? " --deadline=now+TIMEOUT" : "");
        fputs(script ? script : "", stdout);
        rc = script ? 0 : 1;
        free(script);
        bai_opened_free(&so);
    }
    bai_pipeline_free(&op.p);
    return rc;
}

static void cancel_all(char ids[][32], size_t n)
{
    for (size_t i = n; i-- > 0;)
        bai_scancel(ids[i], NULL);
}

/* The graph as the commands read it back (schemas/batchai-pipeline-status.schema.json holds what status
 * prints from it). */
static char *graph_text(const struct opened *op, char ids[][32], char arrays[][32])
{
    cJSON *g = cJSON_CreateObject(), *steps = cJSON_AddArrayToObject(g, "steps"),
          *outs = cJSON_AddObjectToObject(g, "outputs");
    cJSON_AddStringToObject(g, "pipelineId", arrays[0][0] ? arrays[0] : ids[0]);
    cJSON_AddStringToObject(g, "name", op->p.display_name ? op->p.display_name : strrchr(op->base, '/') + 1);
    cJSON_AddStringToObject(g, "file", op->file);
    cJSON_AddBoolToObject(g, "continueOnStepFailure", op->p.continue_on_step_failure);
    for (size_t i = 0; i < op->p.n_steps; i++) {
        const struct bai_pl_step *s = &op->p.steps[i];
        cJSON *o = cJSON_CreateObject(), *deps = cJSON_CreateArray(), *so = cJSON_CreateObject(), *m;
        cJSON_AddStringToObject(o, "name", s->name);
        cJSON_AddStringToObject(o, "jobId", arrays[i][0] ? arrays[i] : ids[i]);
        if (s->sweep) { /* the array's trials, then the job that makes the best trial's outputs the step's */
            char rec[PATH_MAX + 128];
            cJSON_AddStringToObject(o, "bestJobId", ids[i]);
            if (snprintf(rec, sizeof rec, "%s/%s.sweep-%s.json", op->base, s->name, arrays[i]) < (int)sizeof rec)
                cJSON_AddStringToObject(o, "sweepRecord", rec);
        }
        for (size_t k = 0; k < s->n_deps; k++)
            cJSON_AddItemToArray(deps, cJSON_CreateString(op->p.steps[s->deps[k]].name));
        cJSON_AddItemToObject(o, "dependsOn", deps);
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(s->doc, "outputs")) {
            char *path = bai_pipeline_output_path(&op->p, i, m->string, op->base, ids[i]);
            cJSON_AddStringToObject(so, m->string, path ? path : "");
            free(path);
        }
        cJSON_AddItemToObject(o, "outputs", so);
        cJSON_AddItemToArray(steps, o);
    }
    for (size_t i = 0; i < op->p.n_outputs; i++) {
        const struct bai_pl_output *po = &op->p.outputs[i];
        cJSON *o = cJSON_AddObjectToObject(outs, po->name);
        char *path = bai_pipeline_output_path(&op->p, po->step, po->output, op->base, ids[po->step]);
        cJSON_AddStringToObject(o, "step", op->p.steps[po->step].name);
        cJSON_AddStringToObject(o, "output", po->output);
        cJSON_AddStringToObject(o, "path", path ? path : "");
        free(path);
    }
    char *text = cJSON_Print(g);
    cJSON_Delete(g);
    return text;
}

/* The seed of sweep steps without one: printed and recorded, so the same trials can be had again. */
static void quote_into(char *buf, size_t size, const char *s)
{
    size_t n = (size_t)snprintf(buf, size, "'");
    for (; *s && n + 5 < size; s++)
        n += (size_t)snprintf(buf + n, size - n, *s == '\'' ? "'\\''" : "%c", *s);
    snprintf(buf + n, size - n, "'");
}

/* Sweep step i's record (BASE/<step>.sweep-<array>.json: the trials' parameters, the objective, where the
 * trials' directories are and the step's outputs), then the job that, after every trial, makes the best trial's
 * outputs the step's: `batchai-job sweep-best RECORD`, run as the user. *id: that job's. */
static int submit_best(const struct opened *op, size_t i, const char *array, int argc, char **argv,
                       const char *experiment, long *id)
{
    const struct bai_pl_step *s = &op->p.steps[i];
    char rec[PATH_MAX + 128], dir[PATH_MAX + 80], self[PATH_MAX], wrap[3 * PATH_MAX], q1[PATH_MAX + 64],
        q2[2 * PATH_MAX], logf[PATH_MAX + 128], dep[64], jname[200];
    const cJSON *m;
    cJSON *r = bai_sweep_record(s->sweep, array, op->file), *outs = cJSON_AddArrayToObject(r, "outputs");
    snprintf(dir, sizeof dir, "%s/%s", op->base, s->name);
    cJSON_AddStringToObject(r, "step", s->name);
    cJSON_AddStringToObject(r, "trialsDir", dir);
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(s->doc, "outputs"))
        cJSON_AddItemToArray(outs, cJSON_CreateString(m->string));
    char *text = cJSON_Print(r);
    cJSON_Delete(r);
    snprintf(rec, sizeof rec, "%s/%s.sweep-%s.json", op->base, s->name, array);
    if (!text || bai_write_file_atomic(rec, text) != 0) {
        fprintf(stderr, "batchai-job submit: %s: %s\n", rec, text ? strerror(errno) : "out of memory");
        free(text);
        return -1;
    }
    free(text);
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "batchai-job submit: cannot find batchai-job itself (/proc/self/exe)\n");
        return -1;
    }
    self[len] = '\0';
    quote_into(q1, sizeof q1, self);
    quote_into(q2, sizeof q2, rec);
    if (snprintf(wrap, sizeof wrap, "--wrap=exec %s sweep-best %s", q1, q2) >= (int)sizeof wrap ||
        snprintf(logf, sizeof logf, "--output=%s/%s.best-%%j.txt", op->base, s->name) >= (int)sizeof logf) {
        fprintf(stderr, "batchai-job submit: %s: the path is too long\n", rec);
        return -1;
    }
    snprintf(dep, sizeof dep, "--dependency=afterany:%s", array);
    snprintf(jname, sizeof jname, "--job-name=%s.best", s->name);
    char **args = calloc((size_t)argc + 10, sizeof *args);
    if (!args) {
        fprintf(stderr, "batchai-job: out of memory\n");
        return -1;
    }
    int k = 0;
    args[k++] = "sbatch";
    args[k++] = "--parsable";
    args[k++] = dep;
    args[k++] = "--kill-on-invalid-dep=yes";
    args[k++] = jname;
    args[k++] = logf;
    for (int j = 0; j < argc; j++)
        if (strcmp(argv[j], "--parsable") == 0)
            continue;
        else if (strcmp(argv[j], "--experiment") == 0 && j + 1 < argc)
            args[k++] = (char *)experiment, j++;
        else
            args[k++] = argv[j];
    args[k++] = wrap;
    char *out = NULL, *err = NULL;
    int st = bai_run(args, &out, &err);
    free(args);
    *id = st == 0 && out ? strtol(out, NULL, 10) : 0;
    if (*id <= 0)
        fprintf(stderr, "batchai-job submit: step %s: sbatch of the job that picks the best trial failed: %s\n",
                s->name, err && err[0] ? err : out && out[0] ? out : "no message");
    free(out);
    free(err);
    return *id > 0 ? 0 : -1;
}

int bai_pipeline_submit(const struct bai_pipeline_opts *o, const char *path, int argc, char **argv)
{
    struct opened op;
    char ids[BAI_PIPELINE_MAX_STEPS][32], arrays[BAI_PIPELINE_MAX_STEPS][32] = { { 0 } };
    char queued[2 * BAI_PIPELINE_MAX_STEPS][32]; /* every job submitted, for the cancel */
    const char *idp[BAI_PIPELINE_MAX_STEPS];
    bool parsable = false;
    int rc = 1;
    size_t done = 0, n_queued = 0;

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
        if (strcmp(argv[i], "--dependency") == 0 || strncmp(argv[i], "--dependency=", 13) == 0 ||
            strncmp(argv[i], "-d", 2) == 0 || strncmp(argv[i], "--array", 7) == 0 || strcmp(argv[i], "--wait") == 0) {
            fprintf(stderr, "batchai-job submit: %s: a pipeline's dependencies are its own, and its steps are "
                    "single jobs; follow it with `batchai-job wait ID`\n", argv[i]);
            return 2;
        }
    if (open_pipeline(o, path, bai_graph_seed(), &op) != 0)
        return 1;
    /* Nothing is submitted unless every step is valid. */
    if (check_all(o, path, &op) != 0) {
        fprintf(stderr, "batchai-job submit: %s: nothing was submitted\n", path);
        goto out;
    }
    if (mkdir(op.base, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "batchai-job submit: %s: %s; nothing was submitted\n", op.base, strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < op.p.n_steps; i++) {
        const struct bai_pl_step *s = &op.p.steps[i];
        char file[PATH_MAX + 80], *text, *opt = NULL, *name = NULL, *shares = NULL, *dep = NULL;
        for (size_t k = 0; k < op.p.n_steps; k++)
            idp[k] = k < done ? ids[k] : "0";
        snprintf(file, sizeof file, "%s/%s.json", op.base, s->name);
        text = bai_pipeline_step_text(&op.p, i, op.base, idp);
        if (!text || bai_write_file_atomic(file, text) != 0) {
            fprintf(stderr, "batchai-job submit: %s: %s\n", file, text ? strerror(errno) : "out of memory");
            free(text);
            goto fail;
        }
        free(text);
        size_t len = 0;
        char deps[BAI_PIPELINE_MAX_STEPS * 32] = "";
        for (size_t k = 0; k < s->n_deps; k++)
            len += (size_t)snprintf(deps + len, sizeof deps - len, ":%s", ids[s->deps[k]]);
        char **args = calloc((size_t)argc + 14, sizeof *args), *array = NULL, *deadline = NULL;
        if (s->sweep && (asprintf(&array, "--array=0-%zu%%%d", s->sweep->n_trials - 1, s->sweep->max_concurrent) < 0 ||
                         (s->sweep->timeout && asprintf(&deadline, "--deadline=now+%ld", s->sweep->timeout) < 0))) {
            fprintf(stderr, "batchai-job: out of memory\n");
            free(args);
            goto fail;
        }
        if (!args || asprintf(&opt, "--batchai-job=%s", file) < 0 || asprintf(&name, "--batchai-name=%s", s->name) < 0 ||
            (o->shares && asprintf(&shares, "--batchai-share=%s", o->shares) < 0) ||
            (s->n_deps && asprintf(&dep, "--dependency=%s%s", op.p.continue_on_step_failure ? "afterany" : "afterok",
                                   deps) < 0)) {
            fprintf(stderr, "batchai-job: out of memory\n");
            free(args);
            goto fail;
        }
        int k = 0;
        args[k++] = "sbatch";
        args[k++] = "--parsable";
        args[k++] = opt;
        args[k++] = name;
        if (shares)
            args[k++] = shares;
        if (array)
            args[k++] = array;
        if (deadline) { /* the whole sweep's limit, as a sweep job's */
            args[k++] = deadline;
            args[k++] = "--time-min=1";
        }
        if (dep) {
            args[k++] = dep;
            /* A step whose dependency can never be met ends at once instead of waiting for ever. */
            args[k++] = "--kill-on-invalid-dep=yes";
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
        free(opt);
        free(name);
        free(shares);
        free(dep);
        free(array);
        free(deadline);
        long id = st == 0 && out ? strtol(out, NULL, 10) : 0;
        if (id <= 0) {
            fprintf(stderr, "batchai-job submit: step %s: sbatch failed: %s\n", s->name,
                    err && err[0] ? err : out && out[0] ? out : "no message");
            free(out);
            free(err);
            goto fail;
        }
        free(out);
        free(err);
        snprintf(queued[n_queued++], sizeof queued[0], "%ld", id);
        if (s->sweep) {
            snprintf(arrays[done], sizeof arrays[0], "%ld", id);
            if (submit_best(&op, done, arrays[done], argc, argv, experiment, &id) != 0)
                goto fail;
            snprintf(queued[n_queued++], sizeof queued[0], "%ld", id);
        }
        snprintf(ids[done++], sizeof ids[0], "%ld", id);
    }
    char graph[PATH_MAX + 64], *text = graph_text(&op, ids, arrays);
    snprintf(graph, sizeof graph, "%s/pipeline-%s.json", op.base, arrays[0][0] ? arrays[0] : ids[0]);
    if (!text || bai_write_file_atomic(graph, text) != 0) {
        fprintf(stderr, "batchai-job submit: %s: %s\n", graph, text ? strerror(errno) : "out of memory");
        free(text);
        goto fail;
    }
    free(text);
    if (parsable)
        printf("%s\n", arrays[0][0] ? arrays[0] : ids[0]);
    else {
        printf("Submitted pipeline %s (%zu steps):", arrays[0][0] ? arrays[0] : ids[0], op.p.n_steps);
        for (size_t i = 0; i < op.p.n_steps; i++)
            if (arrays[i][0])
                printf(" %s=%s (sweep of %zu trials, seed %llu; best trial by job %s)", op.p.steps[i].name, arrays[i],
                       op.p.steps[i].sweep->n_trials, (unsigned long long)op.p.steps[i].sweep->seed, ids[i]);
            else
                printf(" %s=%s", op.p.steps[i].name, ids[i]);
        printf("\n");
    }
    rc = 0;
    goto out;
fail:
    /* Nothing half-submitted: the steps already queued are cancelled. */
    cancel_all(queued, n_queued);
    if (done)
        fprintf(stderr, "batchai-job submit: %s: the %zu step%s already submitted %s cancelled; nothing of the "
                "pipeline runs\n", path, done, done == 1 ? "" : "s", done == 1 ? "was" : "were");
    else
        fprintf(stderr, "batchai-job submit: %s: nothing was submitted\n", path);
out:
    bai_pipeline_free(&op.p);
    return rc;
}

/* ---- operating a pipeline ---- */

int bai_stdout_path(const struct bai_jobinfo *ji, char *path, size_t size)
{
    /* Slurm 26.05 shows a waiting job's StdOut as given (".../%j/stdouterr/stdout.txt"), 22.05 expanded. */
    const char *p = ji->stdout_path, *at;
    size_t n = 0;
    while ((at = strstr(p, "%j")) != NULL && n < size) {
        n += (size_t)snprintf(path + n, size - n, "%.*s%s", (int)(at - p), p, ji->id);
        p = at + 2;
    }
    if (n >= size || (size_t)snprintf(path + n, size - n, "%s", p) >= size - n)
        return -1;
    char tail[64];
    int t = snprintf(tail, sizeof tail, "/%s/stdouterr/stdout.txt", ji->id);
    size_t len = strlen(path);
    return path[0] == '/' && t > 0 && len > (size_t)t && strcmp(path + len - (size_t)t, tail) == 0 ? 0 : -1;
}

/* The graph of the pipeline whose first step is job `id`: BASE/pipeline-ID.json, BASE four directories
 * above the first step's stdout.txt (BASE/<step>/<id>/stdouterr/stdout.txt; a sweep step's: its task 0's).
 * NULL when id heads none. */
static cJSON *load_graph(const char *id)
{
    struct bai_jobinfo ji;
    char why[1024], path[PATH_MAX + 64], task0[48];
    if (!id[0] || strspn(id, "0123456789") != strlen(id) || strlen(id) > 20)
        return NULL;
    snprintf(task0, sizeof task0, "%s_0", id);
    if ((bai_job_load(id, &ji, why, sizeof why) != 0 || bai_stdout_path(&ji, path, sizeof path) != 0) &&
        (bai_job_load(task0, &ji, why, sizeof why) != 0 || bai_stdout_path(&ji, path, sizeof path) != 0))
        return NULL;
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(path, '/');
        if (!slash || slash == path)
            return NULL;
        *slash = '\0';
    }
    size_t n = strlen(path);
    snprintf(path + n, sizeof path - n, "/pipeline-%s.json", id);
    cJSON *g = bai_read_json(path, NULL);
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(g, "pipelineId");
    if (!cJSON_IsString(pid) || strcmp(pid->valuestring, id) != 0 ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(g, "steps"))) {
        cJSON_Delete(g);
        return NULL;
    }
    return g;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* A sweep step's trials from its record: bai_sweep_status's object, NULL when the record is unreadable. */
static cJSON *sweep_step_status(const cJSON *s)
{
    cJSON *r = bai_read_json(str(s, "sweepRecord"), NULL), *o = NULL;
    if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "trials")) && str(r, "trialsDir")[0]) {
        bool ended;
        int fail;
        o = bai_sweep_status(r, str(r, "trialsDir"), &ended, &fail);
    }
    cJSON_Delete(r);
    return o;
}

/* The graph with each step's state: the object status --json prints. *ended: every step ended; *first_fail:
 * the exit status of the first step (in the pipeline's order) that failed, 0 when none. */
static cJSON *graph_status(const cJSON *g, bool *ended, int *first_fail)
{
    cJSON *o = cJSON_CreateObject(), *steps = cJSON_CreateArray();
    const cJSON *s;
    int running = 0, queued = 0, failed = 0, succeeded = 0, cancelled = 0;

    *ended = true;
    *first_fail = 0;
    cJSON_AddStringToObject(o, "pipelineId", str(g, "pipelineId"));
    cJSON_AddStringToObject(o, "name", str(g, "name"));
    cJSON_AddStringToObject(o, "file", str(g, "file"));
    cJSON_AddBoolToObject(o, "continueOnStepFailure",
                          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "continueOnStepFailure")));
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(g, "steps")) {
        struct bai_jobinfo ji;
        char why[1024];
        cJSON *st = cJSON_CreateObject();
        cJSON_AddStringToObject(st, "name", str(s, "name"));
        cJSON_AddStringToObject(st, "jobId", str(s, "jobId"));
        cJSON_AddItemToObject(st, "dependsOn", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(s, "dependsOn"), 1));
        /* A sweep step: its trials, and its state that of the job that picks the best after them. */
        cJSON *sweep = str(s, "bestJobId")[0] ? sweep_step_status(s) : NULL;
        if (sweep) {
            cJSON_AddStringToObject(st, "bestJobId", str(s, "bestJobId"));
            cJSON_AddItemToObject(st, "sweep", sweep);
        }
        if (bai_job_load(sweep ? str(s, "bestJobId") : str(s, "jobId"), &ji, why, sizeof why) != 0) {
            cJSON_AddStringToObject(st, "executionState", "unknown");
            cJSON_AddStringToObject(st, "slurmState", "");
            cJSON_AddNullToObject(st, "exitCode");
            cJSON_AddStringToObject(st, "error", why);
        } else {
            const char *e = bai_job_execution_state(&ji);
            int code = bai_job_exit_status(&ji);
            if (sweep && strcmp(e, "queued") == 0 && strcmp(str(sweep, "executionState"), "queued") != 0)
                e = "running"; /* its trials run */
            cJSON_AddStringToObject(st, "executionState", e);
            cJSON_AddStringToObject(st, "slurmState", ji.state);
            if (bai_job_ended(&ji) && strcmp(e, "cancelled") != 0 && code >= 0)
                cJSON_AddNumberToObject(st, "exitCode", code);
            else
                cJSON_AddNullToObject(st, "exitCode");
            if (!bai_job_ended(&ji))
                *ended = false;
            running += strcmp(e, "running") == 0 || strcmp(e, "terminating") == 0;
            queued += strcmp(e, "queued") == 0;
            succeeded += strcmp(e, "succeeded") == 0;
            cancelled += strcmp(e, "cancelled") == 0 || strcmp(e, "terminated") == 0;
            if (strcmp(e, "failed") == 0) {
                if (!failed++)
                    *first_fail = code > 0 ? (code > 255 ? 255 : code) : 1;
            }
        }
        cJSON_AddItemToObject(st, "outputs", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(s, "outputs"), 1));
        cJSON_AddItemToArray(steps, st);
    }
    const char *state = failed && *ended ? "failed" : running || (queued && (succeeded || failed)) ? "running"
                        : queued ? "queued" : cancelled ? (failed ? "failed" : "cancelled")
                        : failed ? "failed" : "succeeded";
    cJSON_AddStringToObject(o, "executionState", state);
    cJSON_AddItemToObject(o, "steps", steps);
    cJSON_AddItemToObject(o, "outputs", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(g, "outputs"), 1));
    return o;
}

static int pipeline_status(const cJSON *g, bool json)
{
    bool ended;
    int fail;
    cJSON *o = graph_status(g, &ended, &fail), *s, *m;
    if (json) {
        char *text = cJSON_Print(o);
        if (text)
            puts(text);
        free(text);
    } else {
        printf("pipelineId:       %s\n", str(o, "pipelineId"));
        printf("name:             %s\n", str(o, "name"));
        printf("executionState:   %s\n", str(o, "executionState"));
        printf("%-24s %-10s %-12s %-6s %s\n", "Step", "JobId", "State", "Exit", "After");
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(o, "steps")) {
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(s, "exitCode");
            char exit[16] = "-", after[512] = "";
            if (cJSON_IsNumber(code))
                snprintf(exit, sizeof exit, "%d", code->valueint);
            cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(s, "dependsOn"))
                snprintf(after + strlen(after), sizeof after - strlen(after), "%s%s", after[0] ? "," : "",
                         m->valuestring);
            printf("%-24s %-10s %-12s %-6s %s\n", str(s, "name"), str(s, "jobId"), str(s, "executionState"), exit,
                   after[0] ? after : "-");
        }
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(o, "steps")) {
            const cJSON *sw = cJSON_GetObjectItemCaseSensitive(s, "sweep"), *t;
            const cJSON *best = cJSON_GetObjectItemCaseSensitive(sw, "bestTrial");
            if (!sw)
                continue;
            printf("sweep %s: %d trials (array %s), objective %s %s; ", str(s, "name"),
                   cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(sw, "trials")), str(sw, "sweepId"),
                   str(sw, "goal"), str(sw, "primaryMetric"));
            if (!cJSON_IsNumber(best)) {
                printf("best: none yet (no trial logged %s)\n", str(sw, "primaryMetric"));
                continue;
            }
            cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(sw, "trials"))
                if (cJSON_GetObjectItemCaseSensitive(t, "index")->valueint == best->valueint)
                    printf("best: trial %d (job %s, %.6g)\n", best->valueint, str(t, "jobId"),
                           cJSON_GetObjectItemCaseSensitive(t, "metric")->valuedouble);
        }
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(o, "outputs"))
            printf("output %s: %s (step %s, %s)\n", m->string, str(m, "path"), str(m, "step"), str(m, "output"));
    }
    const char *e = str(o, "executionState");
    int rc = strcmp(e, "failed") == 0 || strcmp(e, "cancelled") == 0;
    cJSON_Delete(o);
    return rc;
}

static int pipeline_wait(const cJSON *g, long timeout_s)
{
    time_t t0 = time(NULL);
    for (unsigned ms = 1000;; ms = ms < 10000 ? ms * 3 / 2 : ms) {
        bool ended;
        int fail;
        cJSON *o = graph_status(g, &ended, &fail);
        if (ended) {
            printf("pipeline %s: %s", str(o, "pipelineId"), str(o, "executionState"));
            const cJSON *s;
            cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(o, "steps"))
                printf(" %s=%s", str(s, "name"), str(s, "executionState"));
            printf("\n");
            int rc = strcmp(str(o, "executionState"), "succeeded") == 0 ? 0 : fail ? fail : 1;
            cJSON_Delete(o);
            return rc;
        }
        cJSON_Delete(o);
        if (timeout_s >= 0 && time(NULL) - t0 >= timeout_s) {
            printf("pipeline %s: not ended after %ld s (--timeout)\n", str(g, "pipelineId"), timeout_s);
            return 124;
        }
        usleep(ms * 1000);
    }
}

/* Every step that has not ended, later steps first (so none starts while the others stop), each through
 * terminate's own handling of one job. */
static int pipeline_terminate(const cJSON *g, int argc, char **argv)
{
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(g, "steps");
    int rc = 0;
    for (int i = cJSON_GetArraySize(steps); i-- > 0;) {
        const cJSON *s = cJSON_GetArrayItem(steps, i);
        char *args[4] = { (char *)str(s, "jobId"), argc > 1 ? argv[1] : NULL, argc > 2 ? argv[2] : NULL, NULL };
        if (str(s, "bestJobId")[0]) {
            /* A sweep step: the job that picks the best first (it only waits on the trials), then the trials
             * as terminate of the sweep stops them (a running one keeps its checkpoint). */
            if (bai_scancel(str(s, "bestJobId"), NULL) != 0)
                rc = 1;
            cJSON *o = sweep_step_status(s);
            if (bai_sweep_stop(str(s, "jobId"), str(s, "sweepRecord"), cJSON_GetObjectItemCaseSensitive(o, "trials"), argc, args) != 0)
                rc = 1;
            cJSON_Delete(o);
            printf("sweep step %s: array %s and job %s ended\n", str(s, "name"), str(s, "jobId"), str(s, "bestJobId"));
            continue;
        }
        struct bai_jobinfo ji;
        char why[1024];
        if (bai_job_load(args[0], &ji, why, sizeof why) == 0 && bai_job_ended(&ji))
            continue;
        if (strcmp(bai_job_execution_state(&ji), "queued") == 0) {
            /* It never ran: nothing to save, no grace; terminate would ask for the log directory it lacks. */
            if (bai_scancel(ji.id, NULL) != 0)
                rc = 1;
            else
                printf("job %s: cancelled before it ran\n", ji.id);
        } else if (bai_job_control_main("terminate", argc, args) != 0)
            rc = 1;
    }
    printf("pipeline %s: terminated\n", str(g, "pipelineId"));
    return rc;
}

int bai_pipeline_control(const char *cmd, int argc, char **argv)
{
    if (argc < 1 || argv[0][0] == '-')
        return -1;
    cJSON *g = load_graph(argv[0]);
    if (!g)
        return -1;
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g, "steps"), 0);
    int rc;
    if (strcmp(cmd, "status") == 0 && (argc == 1 || (argc == 2 && strcmp(argv[1], "--json") == 0)))
        rc = pipeline_status(g, argc == 2);
    else if (strcmp(cmd, "wait") == 0 && (argc == 1 || (argc == 3 && strcmp(argv[1], "--timeout") == 0)))
        rc = pipeline_wait(g, argc == 3 ? strtol(argv[2], NULL, 10) : -1);
    else if (strcmp(cmd, "terminate") == 0)
        rc = pipeline_terminate(g, argc, argv);
    else if (strcmp(cmd, "list") == 0 && argc == 1) {
        /* The pipeline's jobs, as list prints jobs, in the pipeline's order. */
        bool ended;
        int fail;
        cJSON *o = graph_status(g, &ended, &fail);
        const cJSON *s, *code;
        printf("%-10s %-12s %-8s %s\n", "JobId", "State", "Exit", "Step");
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(o, "steps")) {
            char exit[16] = "-";
            if (cJSON_IsNumber(code = cJSON_GetObjectItemCaseSensitive(s, "exitCode")))
                snprintf(exit, sizeof exit, "%d", code->valueint);
            printf("%-10s %-12s %-8s %s\n", str(s, "jobId"), str(s, "executionState"), exit, str(s, "name"));
        }
        cJSON_Delete(o);
        rc = 0;
    } else if ((strcmp(cmd, "nodes") == 0 || strcmp(cmd, "files") == 0 || strcmp(cmd, "stream") == 0 ||
                strcmp(cmd, "exec") == 0) &&
               str(first, "bestJobId")[0]) {
        /* The id is the first step's job's; when that step is a sweep, it is a job array's, whose id Slurm takes
         * for the last trial started (a command step's job is simply that job). */
        fprintf(stderr, "batchai-job %s: %s is a pipeline whose first step, %s, is a sweep: give one of its trials, "
                "as %s_0, or another step's job id (batchai-job status %s lists them)\n", cmd, argv[0],
                str(first, "name"), argv[0], argv[0]);
        rc = 2;
    } else
        rc = -1;
    cJSON_Delete(g);
    return rc;
}

int bai_pipeline_sweep_best(int argc, char **argv)
{
    struct bai_diag d = { 0 };
    const char *me = getenv("SLURM_JOB_ID");

    if (argc != 1 || !me || !me[0] || strspn(me, "0123456789") != strlen(me)) {
        fprintf(stderr, "batchai-job sweep-best RECORD: run by a pipeline's sweep step, as a Slurm job\n");
        return 2;
    }
    cJSON *r = bai_read_json(argv[0], &d);
    bai_diag_print(&d, stderr, "batchai-job sweep-best: ");
    bai_diag_free(&d);
    const char *dir = str(r, "trialsDir"), *step = str(r, "step"), *metric = str(r, "primaryMetric");
    if (!dir[0] || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "trials"))) {
        fprintf(stderr, "batchai-job sweep-best: %s: not a sweep step's record\n", argv[0]);
        cJSON_Delete(r);
        return 1;
    }
    bool ended;
    int fail, rc = 1;
    cJSON *o = bai_sweep_status(r, dir, &ended, &fail);
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(o, "bestTrial"), *t, *m;
    const cJSON *bt = NULL;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(o, "trials"))
        if (cJSON_IsNumber(best) && cJSON_GetObjectItemCaseSensitive(t, "index")->valueint == best->valueint)
            bt = t;
    if (!bt || !str(bt, "jobId")[0]) {
        fprintf(stderr, "sweep step %s: no trial logged the metric %s (MLflow's file store, outputs/mlruns of each "
                "trial under %s): there is no best trial, so the step has no outputs and the steps after it do not "
                "run\n", step, metric, dir);
        goto out;
    }
    char outs[PATH_MAX + 64];
    snprintf(outs, sizeof outs, "%s/%s", dir, me);
    if ((mkdir(outs, 0755) != 0 && errno != EEXIST) ||
        (strncat(outs, "/outputs", sizeof outs - strlen(outs) - 1), mkdir(outs, 0755) != 0 && errno != EEXIST)) {
        fprintf(stderr, "sweep step %s: %s: %s\n", step, outs, strerror(errno));
        goto out;
    }
    printf("sweep step %s: best trial %d (job %s, %s %s = %.10g)\n", step, best->valueint, str(bt, "jobId"),
           str(r, "goal"), metric, cJSON_GetObjectItemCaseSensitive(bt, "metric")->valuedouble);
    rc = 0;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(r, "outputs")) {
        /* The step's output is the best trial's, by a link relative to the trials' directory. */
        char link[2 * PATH_MAX], target[PATH_MAX];
        snprintf(link, sizeof link, "%s/%s", outs, m->valuestring);
        snprintf(target, sizeof target, "../../%s/outputs/%s", str(bt, "jobId"), m->valuestring);
        if (symlink(target, link) != 0) {
            fprintf(stderr, "sweep step %s: %s: %s\n", step, link, strerror(errno));
            rc = 1;
        } else
            printf("output %s: %s -> %s/%s/outputs/%s\n", m->valuestring, link, dir, str(bt, "jobId"),
                   m->valuestring);
    }
out:
    cJSON_Delete(o);
    cJSON_Delete(r);
    return rc;
}
