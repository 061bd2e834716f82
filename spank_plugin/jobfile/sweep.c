/* An Azure ML sweep job as one job array: see batchai_jobfile.h. */
#include "batchai_jobfile.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azureml.h"
#include "checks.h"
#include "jsonv.h"
#include "sbuf.h"
#include "yamltree.h"

enum kind { K_CHOICE, K_RANDINT, K_UNIFORM, K_LOGUNIFORM, K_NORMAL, K_LOGNORMAL };

struct param {
    enum kind kind;
    bool q_form;
    double a, b, q;       /* min/max, mu/sigma, upper in a */
    const cJSON *values;  /* choice */
};

static const struct {
    const char *name;
    enum kind kind;
    bool q;
} kinds[] = {
    { "choice", K_CHOICE, false },        { "randint", K_RANDINT, false },     { "uniform", K_UNIFORM, false },
    { "quniform", K_UNIFORM, true },      { "loguniform", K_LOGUNIFORM, false }, { "qloguniform", K_LOGUNIFORM, true },
    { "normal", K_NORMAL, false },        { "qnormal", K_NORMAL, true },       { "lognormal", K_LOGNORMAL, false },
    { "qlognormal", K_LOGNORMAL, true },
};

/* splitmix64: a small generator whose sequence the seed alone fixes, on every machine. */
static uint64_t next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double unit(uint64_t *state)
{
    return (double)(next(state) >> 11) * 0x1.0p-53;
}

static double gauss(uint64_t *state)
{
    double u = unit(state), v = unit(state);
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v); /* Box-Muller; 1 - u is never 0 */
}

static char *number_text(double x)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.10g", x);
    return strdup(buf);
}

static char *scalar_text(const cJSON *v)
{
    char buf[64];
    if (v->valuestring)
        return strdup(v->valuestring);
    snprintf(buf, sizeof buf, "%s", cJSON_IsTrue(v) ? "true" : "false");
    return strdup(buf);
}

static char *draw(const struct param *p, uint64_t *state)
{
    double x = 0;

    switch (p->kind) {
    case K_CHOICE:
        return scalar_text(cJSON_GetArrayItem(p->values, (int)(next(state) % (uint64_t)cJSON_GetArraySize(p->values))));
    case K_RANDINT: {
        char buf[32];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)(next(state) % (uint64_t)p->a));
        return strdup(buf);
    }
    case K_UNIFORM: x = p->a + (p->b - p->a) * unit(state); break;
    case K_LOGUNIFORM: x = exp(p->a + (p->b - p->a) * unit(state)); break;
    case K_NORMAL: x = p->a + p->b * gauss(state); break;
    case K_LOGNORMAL: x = exp(p->a + p->b * gauss(state)); break;
    }
    if (p->q_form)
        x = round(x / p->q) * p->q;
    return number_text(x);
}

static bool number(struct bai_diag *d, const cJSON *o, const char *key, const char *path, double *out)
{
    const cJSON *v = jv_get(o, key);
    char child[JV_PATH_MAX];
    jv_child(child, path, key);
    if (!cJSON_IsNumber(v)) {
        bai_diag_add(d, child, "expected a number");
        return false;
    }
    *out = v->valuedouble;
    return true;
}

static void parse_param(struct bai_diag *d, const cJSON *v, const char *path, struct param *p)
{
    static const char *const choice_keys[] = { "type", "values", NULL };
    static const char *const randint_keys[] = { "type", "upper", NULL };
    static const char *const range_keys[] = { "type", "min_value", "max_value", NULL };
    static const char *const qrange_keys[] = { "type", "min_value", "max_value", "q", NULL };
    static const char *const normal_keys[] = { "type", "mu", "sigma", NULL };
    static const char *const qnormal_keys[] = { "type", "mu", "sigma", "q", NULL };
    char *type = NULL;
    size_t i;

    if (!jv_expect_object(d, v, path, "a mapping with a type") ||
        jv_string(d, v, "type", path, JV_REQUIRED, &type) != 1)
        return;
    for (i = 0; i < sizeof kinds / sizeof kinds[0] && strcmp(kinds[i].name, type) != 0; i++)
        ;
    if (i == sizeof kinds / sizeof kinds[0]) {
        char child[JV_PATH_MAX];
        jv_child(child, path, "type");
        bai_diag_add(d, child, "\"%.40s\": expected choice, randint, uniform, quniform, loguniform, qloguniform, "
                     "normal, qnormal, lognormal or qlognormal", type);
        free(type);
        return;
    }
    free(type);
    p->kind = kinds[i].kind;
    p->q_form = kinds[i].q;
    switch (p->kind) {
    case K_CHOICE:
        if (jv_object(d, v, path, choice_keys) && jv_array(d, v, "values", path, &p->values) == 1 &&
            cJSON_GetArraySize(p->values) > 0) {
            const cJSON *c;
            cJSON_ArrayForEach(c, p->values)
                if (!cJSON_IsString(c) && !cJSON_IsNumber(c) && !cJSON_IsBool(c))
                    bai_diag_add(d, path, "choice: values are numbers, strings or booleans");
        } else
            bai_diag_add(d, path, "choice: expected values, a non-empty list");
        return;
    case K_RANDINT:
        if (jv_object(d, v, path, randint_keys) && number(d, v, "upper", path, &p->a) &&
            (p->a < 1 || p->a != floor(p->a) || p->a > 1e15))
            bai_diag_add(d, path, "randint: upper is an integer >= 1");
        return;
    case K_UNIFORM:
    case K_LOGUNIFORM:
        if (jv_object(d, v, path, p->q_form ? qrange_keys : range_keys) && number(d, v, "min_value", path, &p->a) &&
            number(d, v, "max_value", path, &p->b) && p->b < p->a)
            bai_diag_add(d, path, "max_value is below min_value");
        break;
    case K_NORMAL:
    case K_LOGNORMAL:
        if (jv_object(d, v, path, p->q_form ? qnormal_keys : normal_keys) && number(d, v, "mu", path, &p->a) &&
            number(d, v, "sigma", path, &p->b) && p->b < 0)
            bai_diag_add(d, path, "sigma is below 0");
        break;
    }
    if (p->q_form && number(d, v, "q", path, &p->q) && !(p->q > 0))
        bai_diag_add(d, path, "q is above 0");
}


static const char *const top_keys[] = {
    "$schema", "type", "name", "display_name", "experiment_name", "description", "tags", "compute", "trial",
    "inputs", "outputs", "sampling_algorithm", "search_space", "objective", "limits", "early_termination",
    "queue_settings", "identity", "resources", NULL,
};
static const char *const trial_keys[] = {
    "command", "code", "environment", "environment_variables", "resources", "distribution", NULL,
};

/* The trial's command with ${{search_space.X}} replaced by ${AZUREML_SWEEP_X}, which the trial's main step
 * sets from its array index (x-batchai-sweep, azureml.h). */
static char *trial_command(struct bai_diag *d, const struct bai_sweep *s, const char *command)
{
    struct sbuf b = { 0 };
    for (const char *p = command, *at; *p; p = at) {
        char name[128];
        int used = 0;
        at = strstr(p, "${{");
        if (!at) {
            sb_puts(&b, p);
            break;
        }
        sb_printf(&b, "%.*s", (int)(at - p), p);
        if (sscanf(at, "${{ search_space.%127[A-Za-z0-9_] }}%n", name, &used) == 1 && used > 0) {
            size_t k;
            for (k = 0; k < s->n_params && strcmp(s->names[k], name) != 0; k++)
                ;
            if (k == s->n_params)
                bai_diag_add(d, "trial.command", "${{search_space.%s}}: the search space has no %s", name, name);
            sb_printf(&b, "${AZUREML_SWEEP_%s}", name);
            at += used;
        } else {
            sb_puts(&b, "${{");
            at += 3;
        }
    }
    return sb_finish(&b);
}

/* The trials' values as data in the trial's command job (x-batchai-sweep, azureml.h), which its main step
 * sets from the array index before the command. */
static void add_trials(struct bai_diag *d, cJSON *trial, const struct bai_sweep *s)
{
    cJSON *x = cJSON_CreateObject(), *names = cJSON_AddArrayToObject(x, "names"),
          *trials = cJSON_AddArrayToObject(x, "trials");
    bool ok = names && trials;
    for (size_t k = 0; ok && k < s->n_params; k++)
        ok = cJSON_AddItemToArray(names, cJSON_CreateString(s->names[k]));
    cJSON *chunk = NULL;
    for (size_t t = 0; ok && t < s->n_trials; t++) {
        /* In lists of at most BAI_JOB_MAX_ITEMS, which a job file's lists may hold. */
        if (t % BAI_JOB_MAX_ITEMS == 0)
            ok = (chunk = cJSON_CreateArray()) != NULL && cJSON_AddItemToArray(trials, chunk);
        cJSON *row = ok ? cJSON_CreateArray() : NULL;
        ok = row && cJSON_AddItemToArray(chunk, row);
        for (size_t k = 0; ok && k < s->n_params; k++)
            ok = cJSON_AddItemToArray(row, cJSON_CreateString(s->values[t * s->n_params + k]));
    }
    cJSON_DeleteItemFromObjectCaseSensitive(trial, BAI_AML_SWEEP_KEY);
    if (!ok || !cJSON_AddItemToObject(trial, BAI_AML_SWEEP_KEY, x)) {
        cJSON_Delete(x);
        bai_diag_add(d, "trial", "out of memory");
    }
}

/* What a sweep job and a pipeline's sweep step share: sampling_algorithm, objective, search_space and limits
 * of `root`, and every trial's values drawn. Returns 0, or -1 with the faults in d. */
static int spec(const cJSON *root, uint64_t seed, struct bai_sweep *s, struct bai_diag *d)
{
    size_t before = bai_diag_total(d);
    struct param params[BAI_SWEEP_MAX_PARAMS];
    const cJSON *v, *m;
    char path[JV_PATH_MAX], *str = NULL;

    s->seed = seed;
    if (jv_get(root, "early_termination"))
        bai_diag_add(d, "early_termination", "not applied here: every trial runs to its end; remove "
                     "early_termination (bandit, median_stopping and truncation_selection are Azure ML's)");
    /* sampling_algorithm: a name, or {type, seed} */
    v = jv_get(root, "sampling_algorithm");
    const char *alg = cJSON_IsString(v) ? v->valuestring : cJSON_IsString(jv_get(v, "type")) ? jv_get(v, "type")->valuestring
                                                                                              : "random";
    if (cJSON_IsObject(v)) {
        static const char *const alg_keys[] = { "type", "seed", "rule", NULL };
        int given = 0;
        if (jv_object(d, v, "sampling_algorithm", alg_keys) &&
            jv_int(d, v, "seed", "sampling_algorithm", 0, 2147483647, 0, &given) == 1)
            s->seed = (uint64_t)given;
        if (cJSON_IsString(jv_get(v, "rule")) && strcmp(jv_get(v, "rule")->valuestring, "random") != 0)
            bai_diag_add(d, "sampling_algorithm.rule", "only the random rule is drawn here (no sobol)");
    }
    if (strcmp(alg, "bayesian") == 0)
        bai_diag_add(d, "sampling_algorithm", "\"bayesian\": not run here (it needs Azure ML's service to choose each "
                     "trial from the last); use random or grid");
    else if (strcmp(alg, "random") != 0 && strcmp(alg, "grid") != 0)
        bai_diag_add(d, "sampling_algorithm", "\"%.40s\": expected random or grid", alg);
    s->random = strcmp(alg, "grid") != 0;
    /* objective */
    v = jv_get(root, "objective");
    if (!cJSON_IsObject(v))
        bai_diag_add(d, "objective", "expected a mapping with goal and primary_metric");
    else {
        static const char *const obj_keys[] = { "goal", "primary_metric", NULL };
        if (jv_object(d, v, "objective", obj_keys) && jv_string(d, v, "goal", "objective", JV_REQUIRED, &str) == 1) {
            s->maximize = strcmp(str, "maximize") == 0;
            if (!s->maximize && strcmp(str, "minimize") != 0)
                bai_diag_add(d, "objective.goal", "\"%.40s\": expected minimize or maximize", str);
        }
        free(str);
        str = NULL;
        if (jv_string(d, v, "primary_metric", "objective", JV_REQUIRED | JV_NONEMPTY, &s->metric) == 1 &&
            (strchr(s->metric, '/') || strcmp(s->metric, "..") == 0 || strcmp(s->metric, ".") == 0))
            bai_diag_add(d, "objective.primary_metric", "a metric's name is a file name in MLflow's store: no '/'");
    }
    /* search space */
    v = jv_get(root, "search_space");
    if (!cJSON_IsObject(v) || !v->child)
        bai_diag_add(d, "search_space", "expected a mapping of parameters");
    cJSON_ArrayForEach(m, (cJSON_IsObject(v) ? v : NULL)) {
        jv_child_quoted(path, "search_space", m->string);
        if (s->n_params == BAI_SWEEP_MAX_PARAMS) {
            bai_diag_add(d, path, "at most %d parameters", BAI_SWEEP_MAX_PARAMS);
            break;
        }
        if (!bai_identifier_ok(m->string) || strlen(m->string) > 64)
            bai_diag_add(d, path, "a parameter's name has letters, digits and '_', not starting with a digit");
        memset(&params[s->n_params], 0, sizeof params[0]);
        parse_param(d, m, path, &params[s->n_params]);
        if (!s->random && params[s->n_params].kind != K_CHOICE)
            bai_diag_add(d, path, "grid sampling takes choice parameters only, as Azure ML's");
        s->names[s->n_params++] = strdup(m->string);
    }
    /* limits */
    int total = 0, concurrent = 0, timeout = 0, trial_timeout = 0;
    v = jv_get(root, "limits");
    if (!cJSON_IsObject(v))
        bai_diag_add(d, "limits", "expected a mapping with max_total_trials");
    else {
        static const char *const lim_keys[] = { "max_total_trials", "max_concurrent_trials", "timeout",
                                                "trial_timeout", NULL };
        jv_object(d, v, "limits", lim_keys);
        jv_int(d, v, "max_total_trials", "limits", 1, BAI_SWEEP_MAX_TRIALS, JV_REQUIRED, &total);
        jv_int(d, v, "max_concurrent_trials", "limits", 1, BAI_SWEEP_MAX_TRIALS, 0, &concurrent);
        jv_int(d, v, "timeout", "limits", 1, 3650 * 86400, 0, &timeout);
        jv_int(d, v, "trial_timeout", "limits", 1, 3650 * 86400, 0, &trial_timeout);
    }
    if (bai_diag_total(d) > before)
        return -1;
    s->n_trials = (size_t)total;
    if (!s->random) {
        size_t grid = 1;
        for (size_t k = 0; k < s->n_params && grid < BAI_SWEEP_MAX_TRIALS; k++)
            grid *= (size_t)cJSON_GetArraySize(params[k].values);
        if (grid < s->n_trials)
            s->n_trials = grid;
    }
    s->max_concurrent = concurrent ? concurrent : (int)s->n_trials;
    s->timeout = timeout;
    s->values = calloc(s->n_trials * s->n_params + 1, sizeof *s->values);
    uint64_t state = s->seed;
    for (size_t t = 0; s->values && t < s->n_trials; t++)
        for (size_t k = 0, rest = t; k < s->n_params; k++) {
            char **out = &s->values[t * s->n_params + k];
            if (s->random)
                *out = draw(&params[k], &state);
            else { /* mixed radix, the last parameter fastest */
                size_t radix = 1;
                for (size_t j = k + 1; j < s->n_params; j++)
                    radix *= (size_t)cJSON_GetArraySize(params[j].values);
                *out = scalar_text(cJSON_GetArrayItem(params[k].values, (int)(rest / radix)));
                rest %= radix;
            }
        }
    s->trial_timeout = trial_timeout;
    return s->values ? 0 : -1;
}

/* The trial's limits.timeout: trial_timeout, capped by the whole sweep's. */
static void trial_limit(cJSON *trial, const struct bai_sweep *s)
{
    if (s->trial_timeout || s->timeout) {
        cJSON_DeleteItemFromObjectCaseSensitive(trial, "limits");
        cJSON *lim = cJSON_AddObjectToObject(trial, "limits");
        long t = s->trial_timeout && (!s->timeout || s->trial_timeout < s->timeout) ? s->trial_timeout : s->timeout;
        cJSON_AddNumberToObject(lim, "timeout", (double)t);
    }
}

int bai_sweep_parse(const char *text, size_t len, const char *file, uint64_t seed, struct bai_sweep *s,
                    struct bai_diag *d)
{
    size_t before = bai_diag_total(d);
    const cJSON *v, *m;
    int n = 0;

    memset(s, 0, sizeof *s);
    cJSON *root = bai_yaml_tree(text, len, d);
    if (!root || !jv_object(d, root, "", top_keys))
        goto out;
    /* The trial's keys and command are checked even when the rest is faulty: one round of faults, not two. */
    bool spec_ok = spec(root, seed, s, d) == 0;
    /* The trial: a command job. */
    const cJSON *trial = jv_get(root, "trial");
    if (!cJSON_IsObject(trial) || !jv_object(d, trial, "trial", trial_keys)) {
        bai_diag_add(d, "trial", "expected a mapping with a command");
        goto out;
    }
    s->trial = cJSON_Duplicate(trial, true);
    cJSON_DeleteItemFromObjectCaseSensitive(s->trial, "command");
    const cJSON *cmd = jv_get(trial, "command");
    char *command = cJSON_IsString(cmd) ? trial_command(d, s, cmd->valuestring) : NULL;
    if (!command) {
        bai_diag_add(d, "trial.command", "expected the trial's command");
        goto out;
    }
    cJSON_AddStringToObject(s->trial, "command", command);
    free(command);
    if (!spec_ok)
        goto out;
    add_trials(d, s->trial, s);
    const cJSON *code = jv_get(trial, "code");
    if (cJSON_IsString(code) && code->valuestring[0] != '/' && !strstr(code->valuestring, "://") &&
        strncmp(code->valuestring, "azureml:", 8) != 0) {
        const char *slash = strrchr(file, '/');
        char *abs = NULL;
        if (asprintf(&abs, "%.*s/%s", (int)(slash ? slash - file : 1), slash ? file : ".", code->valuestring) > 0) {
            cJSON_ReplaceItemInObjectCaseSensitive(s->trial, "code", cJSON_CreateString(abs));
            free(abs);
        }
    }
    static const char *const copied[] = { "inputs", "outputs", "compute", "experiment_name", "display_name",
                                          "queue_settings", "identity", "resources", NULL };
    for (n = 0; copied[n]; n++)
        if ((v = jv_get(root, copied[n])) != NULL && !jv_get(s->trial, copied[n]))
            cJSON_AddItemToObject(s->trial, copied[n], cJSON_Duplicate(v, true));
    /* A literal input as the file wrote it (0.1, not 0.10000000000000001). */
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(s->trial, "inputs");
    if (cJSON_IsObject(ins)) {
        cJSON *copy = cJSON_CreateObject();
        cJSON_ArrayForEach(m, ins)
            cJSON_AddItemToObject(copy, m->string, (cJSON_IsNumber(m) || cJSON_IsBool(m)) && m->valuestring
                                                       ? cJSON_CreateString(m->valuestring)
                                                       : cJSON_Duplicate(m, true));
        cJSON_ReplaceItemInObjectCaseSensitive(s->trial, "inputs", copy);
    }
    trial_limit(s->trial, s);
out:
    cJSON_Delete(root);
    if (bai_diag_total(d) > before) {
        bai_sweep_free(s);
        return -1;
    }
    return 0;
}

int bai_sweep_step(const cJSON *step, uint64_t seed, cJSON *trial, struct bai_sweep *s, struct bai_diag *d)
{
    size_t before = bai_diag_total(d);
    memset(s, 0, sizeof *s);
    if (spec(step, seed, s, d) == 0) {
        const cJSON *cmd = jv_get(trial, "command");
        char *command = cJSON_IsString(cmd) ? trial_command(d, s, cmd->valuestring) : NULL;
        if (command) {
            cJSON_ReplaceItemInObjectCaseSensitive(trial, "command", cJSON_CreateString(command));
            free(command);
            add_trials(d, trial, s);
            trial_limit(trial, s);
        } else
            bai_diag_add(d, "trial", "the trial has no command");
    }
    if (bai_diag_total(d) > before) {
        bai_sweep_free(s);
        return -1;
    }
    return 0;
}

void bai_sweep_free(struct bai_sweep *s)
{
    for (size_t i = 0; s->values && i < s->n_trials * s->n_params; i++)
        free(s->values[i]);
    free(s->values);
    for (size_t i = 0; i < s->n_params; i++)
        free(s->names[i]);
    free(s->metric);
    cJSON_Delete(s->trial);
    memset(s, 0, sizeof *s);
}

bool bai_sweep_detect(const char *text, size_t len)
{
    return bai_yaml_type_is(text, len, "sweep");
}
