/* An Azure ML pipeline job as a graph of command jobs: see batchai_jobfile.h. */
#include "batchai_jobfile.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "jsonv.h"
#include "yamltree.h"

#define MAX_DEPTH 8 /* nested pipeline components */
#define MAX_TREES 96

/* A binding resolved in its scope. */
enum val_kind { V_NONE, V_LIT, V_DATA, V_STEP };
struct val {
    enum val_kind kind;
    const cJSON *node; /* V_LIT: the scalar; V_DATA: the mapping (type, path, mode) */
    const char *dir;   /* V_DATA: the directory its relative path is relative to */
    size_t step;       /* V_STEP: the producing step and its output */
    const char *output;
    const char *type;  /* V_STEP: the output's type ("uri_folder" when not declared) */
};

/* A named value of a scope: an input, or an output of a step of the scope. */
struct named {
    char *name;
    struct val v;
};

/* A pipeline (the job, or a pipeline component) being expanded. */
struct scope {
    const char *path;     /* YAML path of the scope's jobs' parent: "" or "jobs.OUTER." */
    const char *prefix;   /* step name prefix: "" or "OUTER." */
    const char *dir;      /* the directory of the file that holds this scope */
    struct named inputs[64];
    size_t n_inputs;
    const cJSON *outputs; /* the scope's declared outputs (may be NULL) */
    struct named produced[64]; /* output name -> the step output bound to it */
    size_t n_produced;
    struct named step_outs[256]; /* "S.Y" -> step output */
    size_t n_step_outs;
};

struct ctx {
    struct bai_pipeline *p;
    const struct bai_settings *site;
    struct bai_diag *d;
    cJSON *trees[MAX_TREES]; /* every document read, alive until the end */
    char **strings;          /* strings the values point to */
    size_t n_trees, n_strings, cap_strings;
    const char *compute;     /* settings.default_compute */
    const char *experiment;
    uint64_t seed;           /* sweep steps without a seed of their own */
    const cJSON *space;      /* the search space of the sweep step being expanded, else NULL */
};

static const char *keep(struct ctx *c, char *s)
{
    if (s && c->n_strings == c->cap_strings) {
        size_t cap = c->cap_strings ? c->cap_strings * 2 : 256;
        char **grown = realloc(c->strings, cap * sizeof *grown);
        if (grown) {
            c->strings = grown;
            c->cap_strings = cap;
        }
    }
    if (!s || c->n_strings == c->cap_strings) {
        free(s);
        bai_diag_add(c->d, "", "out of memory");
        return "";
    }
    return c->strings[c->n_strings++] = s;
}

/* a b d joined, kept until the end. */
static const char *join(struct ctx *c, const char *a, const char *b, const char *d)
{
    char *s = NULL;
    if (asprintf(&s, "%s%s%s", a, b, d) < 0)
        s = NULL;
    return keep(c, s);
}

static const char *const data_types[] = { "uri_folder", "uri_file", "mltable", "mlflow_model", "custom_model",
                                          "triton_model", NULL };
static const char *const literal_types[] = { "string", "integer", "number", "boolean", NULL };

static bool in_set(const char *s, const char *const set[])
{
    for (size_t i = 0; s && set[i]; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}

/* ---- reading files ---- */

static char *dir_of(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash ? strndup(file, slash == file ? 1 : (size_t)(slash - file)) : strdup(".");
}

/* rel under dir, unless absolute; "./" dropped. */
static const char *under(struct ctx *c, const char *dir, const char *rel)
{
    if (rel[0] == '/')
        return rel;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    if (!*rel || strcmp(rel, ".") == 0)
        return dir;
    return join(c, dir, strcmp(dir, "/") ? "/" : "", rel);
}

static const cJSON *read_tree(struct ctx *c, const char *file, const char *path)
{
    struct bai_diag sub = { 0 };
    char *text = NULL;
    size_t len = 0;
    cJSON *root = NULL;

    if (c->n_trees == MAX_TREES) {
        bai_diag_add(c->d, path, "too many component files");
        return NULL;
    }
    if (bai_job_read(file, &text, &len, &sub) == 0)
        root = bai_yaml_tree(text, len, &sub);
    free(text);
    for (size_t i = 0; i < sub.count; i++)
        bai_diag_add(c->d, path, "%s: %s", file, sub.msg[i]);
    bai_diag_free(&sub);
    if (root && !cJSON_IsObject(root)) {
        bai_diag_add(c->d, path, "%s: expected a mapping (a component)", file);
        cJSON_Delete(root);
        return NULL;
    }
    if (root)
        c->trees[c->n_trees++] = root;
    return root;
}

/* The step's component and the directory its paths are relative to. */
static const cJSON *component_of(struct ctx *c, const cJSON *step, const char *path, const char *dir,
                                 const char **comp_dir, const char *key)
{
    const cJSON *v = jv_get(step, key);
    char child[JV_PATH_MAX];

    *comp_dir = dir;
    jv_child(child, path, key);
    if (!v)
        return NULL;
    if (cJSON_IsObject(v))
        return v;
    if (!cJSON_IsString(v) || !v->valuestring[0]) {
        bai_diag_add(c->d, child, "expected a component file, an azureml: reference or a mapping");
        return NULL;
    }
    const char *ref = v->valuestring, *file;
    if (strncmp(ref, "azureml:", 8) == 0) {
        file = bai_settings_component_file(c->site, ref);
        if (!file) {
            bai_diag_add(c->d, child, "the registered component \"%.100s\" is not mapped on this site: give its "
                         "file (component: ./train.yml), or ask the admins for component.%.100s=FILE", ref, ref);
            return NULL;
        }
    } else {
        if (strncmp(ref, "file:", 5) == 0)
            ref += 5;
        if (strstr(ref, "://")) {
            bai_diag_add(c->d, child, "\"%.100s\": the site fetches no components: give a file", ref);
            return NULL;
        }
        file = under(c, dir, ref);
    }
    const cJSON *root = read_tree(c, file, child);
    if (root)
        *comp_dir = keep(c, dir_of(file));
    return root;
}

/* ---- bindings ---- */

/* The expression of a whole-value binding "${{ X }}" (spaces trimmed) into buf; false when v is none. */
static bool expression(const cJSON *v, char *buf, size_t size)
{
    if (!cJSON_IsString(v))
        return false;
    const char *s = v->valuestring, *end;
    size_t n = strlen(s);
    if (n < 5 || strncmp(s, "${{", 3) != 0 || strcmp(s + n - 2, "}}") != 0)
        return false;
    s += 3;
    end = v->valuestring + n - 2;
    while (s < end && *s == ' ')
        s++;
    while (end > s && end[-1] == ' ')
        end--;
    snprintf(buf, size, "%.*s", (int)(end - s), s);
    return true;
}

static const struct named *find(const struct named *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0)
            return &list[i];
    return NULL;
}

/* A binding of an input in scope sc: a literal, data, another step's output, or an input of the scope. */
static struct val resolve_input(struct ctx *c, struct scope *sc, const cJSON *v, const char *path,
                                const char *dir)
{
    struct val out = { .kind = V_NONE };
    char expr[256], step[128], name[128];

    if (!v || cJSON_IsNull(v))
        return out;
    if (expression(v, expr, sizeof expr)) {
        const struct named *n = NULL;
        if (sscanf(expr, "parent.jobs.%127[^.].outputs.%127s", step, name) == 2) {
            char key[260];
            snprintf(key, sizeof key, "%s.%s", step, name);
            n = find(sc->step_outs, sc->n_step_outs, key);
            if (!n)
                bai_diag_add(c->d, path, "${{%s}}: the pipeline has no step \"%s\" with an output \"%s\" (before "
                             "this step)", expr, step, name);
        } else if (sscanf(expr, "parent.inputs.%127s", name) == 1) {
            n = find(sc->inputs, sc->n_inputs, name);
            if (!n)
                bai_diag_add(c->d, path, "${{%s}}: the pipeline has no input \"%s\"", expr, name);
        } else
            bai_diag_add(c->d, path, "${{%s}}: expected ${{parent.inputs.X}} or ${{parent.jobs.S.outputs.Y}}",
                         expr);
        return n ? n->v : out;
    }
    if (cJSON_IsString(v) && strstr(v->valuestring, "${{")) {
        bai_diag_add(c->d, path, "a binding is a whole value (\"${{parent.inputs.X}}\"), not part of a text");
        return out;
    }
    if (cJSON_IsObject(v)) {
        out.kind = V_DATA;
        out.node = v;
        out.dir = dir;
        return out;
    }
    if (cJSON_IsArray(v)) {
        bai_diag_add(c->d, path, "expected a value, a binding or a mapping with type and path");
        return out;
    }
    out.kind = V_LIT;
    out.node = v;
    return out;
}

static const char *scalar(const cJSON *v, char *buf, size_t size)
{
    if (v->valuestring)
        return v->valuestring;
    if (cJSON_IsNumber(v))
        snprintf(buf, size, "%.17g", v->valuedouble);
    else
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    return buf;
}

/* A literal against the declared type (string, integer, number, boolean). */
static void check_literal(struct ctx *c, const char *path, const char *type, const cJSON *v)
{
    char buf[64], *end = NULL;
    const char *s = scalar(v, buf, sizeof buf);

    if (!type || strcmp(type, "string") == 0)
        return;
    if (strcmp(type, "integer") == 0)
        (void)strtol(s, &end, 10);
    else if (strcmp(type, "number") == 0)
        (void)strtod(s, &end);
    else if (strcmp(type, "boolean") == 0)
        end = (char *)(strcmp(s, "true") == 0 || strcmp(s, "false") == 0 || strcmp(s, "True") == 0 ||
                       strcmp(s, "False") == 0 ? "" : "x");
    if (!*s || (end && *end))
        bai_diag_add(c->d, path, "type mismatch: \"%.40s\" is not a%s %s, the input's type", s,
                     strcmp(type, "integer") == 0 ? "n" : "", type);
}

static const char *data_type_of(const cJSON *spec)
{
    const cJSON *t = jv_get(spec, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* The value's kind against the declared type of the input it binds. */
static bool check_type(struct ctx *c, const char *path, const char *decl, const struct val *v)
{
    bool decl_data = in_set(decl, data_types), decl_lit = in_set(decl, literal_types);
    const char *given = v->kind == V_STEP ? v->type : v->kind == V_DATA ? data_type_of(v->node) : NULL;

    if (v->kind == V_LIT) {
        if (decl_data) {
            bai_diag_add(c->d, path, "type mismatch: a value where the input is data (%s): give a mapping with "
                         "type and path, or bind a step's output", decl);
            return false;
        }
        check_literal(c, path, decl, v->node);
        return true;
    }
    if (decl_lit) {
        bai_diag_add(c->d, path, "type mismatch: data (%s) where the input is a %s", given ? given : "uri_folder",
                     decl);
        return false;
    }
    /* A binding that gives its own type is taken as that type, as Azure ML takes it (4c_web_url_input binds a
     * uri_file to a uri_folder input); a step's output has the type its component declares. */
    if (v->kind == V_STEP && decl && given && ((strcmp(decl, "uri_file") == 0 && strcmp(given, "uri_folder") == 0) ||
                          (strcmp(decl, "uri_folder") == 0 && strcmp(given, "uri_file") == 0))) {
        bai_diag_add(c->d, path, "type mismatch: a %s where the input is a %s", given, decl);
        return false;
    }
    return true;
}

/* A data mapping for a command job's inputs or outputs: its local path made absolute. */
static cJSON *data_copy(struct ctx *c, const cJSON *spec, const char *dir, const char *type)
{
    cJSON *o = cJSON_CreateObject();
    const cJSON *m;

    cJSON_ArrayForEach(m, spec) {
        if (strcmp(m->string, "path") == 0 && cJSON_IsString(m)) {
            const char *s = m->valuestring, *local = strncmp(s, "file:", 5) == 0 ? s + 5 : s;
            bool remote = strstr(s, "://") || strncmp(s, "azureml:", 8) == 0;
            cJSON_AddStringToObject(o, "path", remote ? s : under(c, dir, local));
        } else if (strcmp(m->string, "type") != 0)
            cJSON_AddItemToObject(o, m->string, cJSON_Duplicate(m, true));
    }
    if (type || data_type_of(spec))
        cJSON_AddStringToObject(o, "type", data_type_of(spec) ? data_type_of(spec) : type);
    return o;
}

/* ---- steps ---- */

static void add_dep(struct bai_pl_step *s, size_t from)
{
    for (size_t i = 0; i < s->n_deps; i++)
        if (s->deps[i] == from)
            return;
    if (s->n_deps < BAI_PIPELINE_MAX_STEPS)
        s->deps[s->n_deps++] = from;
}

static void add_named(struct ctx *c, struct named *list, size_t *n, size_t cap, const char *name, struct val v)
{
    if (*n == cap) {
        bai_diag_add(c->d, "", "too many inputs, outputs or steps");
        return;
    }
    list[*n].name = (char *)keep(c, strdup(name));
    list[(*n)++].v = v;
}

static void expand_jobs(struct ctx *c, struct scope *sc, const cJSON *jobs, int depth);

static const char *const step_keys[] = {
    "type", "component", "compute", "inputs", "outputs", "resources", "distribution", "limits",
    "environment_variables", "display_name", "name", "description", "tags", "services", "identity",
    "queue_settings", "code", "command", "environment", "experiment_name", "trial", "search_space", "objective",
    "sampling_algorithm", "early_termination", NULL,
};
static const char *const component_keys[] = {
    "$schema", "type", "name", "version", "display_name", "description", "tags", "inputs", "outputs", "code",
    "environment", "command", "resources", "distribution", "environment_variables", "is_deterministic",
    "jobs", "settings", NULL,
};

/* Inputs of a step against its component's declarations: each bound value, or the default. Calls back for
 * each value with its declared type. */
typedef void (*input_fn)(struct ctx *c, void *arg, const char *name, const char *decl_type, struct val v,
                         const char *path);

static void bind_inputs(struct ctx *c, struct scope *sc, const cJSON *step, const cJSON *comp,
                        const char *path, const char *dir, const char *comp_dir, input_fn fn, void *arg)
{
    const cJSON *given = jv_get(step, "inputs"), *decl = comp ? jv_get(comp, "inputs") : NULL, *m;
    char child[JV_PATH_MAX], base[JV_PATH_MAX];

    jv_child(base, path, "inputs");
    if (given && !jv_expect_object(c->d, given, base, "a mapping of input names"))
        given = NULL;
    if (decl && !cJSON_IsObject(decl))
        decl = NULL;
    cJSON_ArrayForEach(m, given) {
        jv_child_quoted(child, base, m->string);
        if (comp && !jv_get(decl, m->string))
            bai_diag_add(c->d, child, "the component declares no input \"%.64s\"", m->string);
        else if (!comp)
            fn(c, arg, m->string, NULL, resolve_input(c, sc, m, child, dir), child);
    }
    cJSON_ArrayForEach(m, decl) {
        const cJSON *b = jv_get(given, m->string), *t = cJSON_IsObject(m) ? jv_get(m, "type") : NULL;
        const cJSON *opt = cJSON_IsObject(m) ? jv_get(m, "optional") : NULL;
        const char *type = cJSON_IsString(t) ? t->valuestring : NULL;
        struct val v;
        jv_child_quoted(child, base, m->string);
        if (!b && c->space && jv_get(c->space, m->string)) {
            /* A parameter of the sweep: each trial's own value, set by the array's command. */
            cJSON *ref = cJSON_CreateString("");
            char var[128];
            snprintf(var, sizeof var, "${AZUREML_SWEEP_%.64s}", m->string);
            cJSON_SetValuestring(ref, var);
            if (c->n_trees == MAX_TREES) {
                cJSON_Delete(ref);
                bai_diag_add(c->d, child, "too many documents");
                continue;
            }
            c->trees[c->n_trees++] = ref;
            struct val sv = { .kind = V_LIT, .node = ref };
            fn(c, arg, m->string, NULL, sv, child);
            continue;
        }
        if (b)
            v = resolve_input(c, sc, b, child, dir);
        else if (cJSON_IsObject(m) && jv_get(m, "default"))
            v = resolve_input(c, sc, jv_get(m, "default"), child, comp_dir);
        else if (cJSON_IsObject(m) && jv_get(m, "path")) /* a pipeline component's own data */
            v = resolve_input(c, sc, m, child, comp_dir);
        else {
            if (!cJSON_IsTrue(opt))
                bai_diag_add(c->d, child, "the component's input \"%.64s\" is required and has no default: bind it",
                             m->string);
            continue;
        }
        if (v.kind == V_NONE || !check_type(c, child, type, &v))
            continue;
        fn(c, arg, m->string, type, v, child);
    }
}

struct command_arg {
    size_t index;
    cJSON *inputs;
};

static void command_input(struct ctx *c, void *arg, const char *name, const char *decl, struct val v,
                          const char *path)
{
    struct command_arg *a = arg;
    struct bai_pl_step *s = &c->p->steps[a->index];
    char buf[64];
    (void)path;

    switch (v.kind) {
    case V_NONE:
        return;
    case V_LIT:
        cJSON_AddStringToObject(a->inputs, name, scalar(v.node, buf, sizeof buf));
        return;
    case V_DATA:
        cJSON_AddItemToObject(a->inputs, name, data_copy(c, v.node, v.dir, in_set(decl, data_types) ? decl : NULL));
        return;
    case V_STEP: {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", decl && in_set(decl, data_types) ? decl : v.type);
        cJSON_AddStringToObject(o, "path", "/"); /* filled at submission (bai_pipeline_step_text) */
        cJSON_AddItemToObject(a->inputs, name, o);
        struct bai_pl_link *l = realloc(s->links, (s->n_links + 1) * sizeof *l);
        if (!l) {
            bai_diag_add(c->d, path, "out of memory");
            return;
        }
        s->links = l;
        l[s->n_links].input = strdup(name);
        l[s->n_links].output = strdup(v.output);
        l[s->n_links++].from = v.step;
        add_dep(s, v.step);
        return;
    }
    }
}

static void copy_member(cJSON *doc, const cJSON *from, const char *key)
{
    const cJSON *v = from ? jv_get(from, key) : NULL;
    if (v) {
        cJSON_DeleteItemFromObjectCaseSensitive(doc, key);
        cJSON_AddItemToObject(doc, key, cJSON_Duplicate(v, true));
    }
}

/* Outputs of a command step: each the bound spec, or the site's directory; registered for later steps. */
static void command_outputs(struct ctx *c, struct scope *sc, const cJSON *step, const cJSON *comp,
                            const char *path, const char *step_name, const char *dir, size_t index, cJSON *doc)
{
    const cJSON *given = jv_get(step, "outputs"), *decl = comp ? jv_get(comp, "outputs") : given, *m;
    cJSON *outs = cJSON_AddObjectToObject(doc, "outputs");
    char child[JV_PATH_MAX], base[JV_PATH_MAX], expr[256], name[128];

    jv_child(base, path, "outputs");
    if (given && !jv_expect_object(c->d, given, base, "a mapping of output names"))
        given = NULL;
    cJSON_ArrayForEach(m, (comp ? given : NULL)) {
        jv_child_quoted(child, base, m->string);
        if (!jv_get(decl, m->string))
            bai_diag_add(c->d, child, "the component declares no output \"%.64s\"", m->string);
    }
    cJSON_ArrayForEach(m, (cJSON_IsObject(decl) ? decl : NULL)) {
        const cJSON *b = jv_get(given, m->string), *spec = NULL;
        const char *type = cJSON_IsObject(m) && data_type_of(m) ? data_type_of(m) : "uri_folder", *spec_dir = dir;
        jv_child_quoted(child, base, m->string);
        if (b && expression(b, expr, sizeof expr)) {
            if (sscanf(expr, "parent.outputs.%127s", name) != 1) {
                bai_diag_add(c->d, child, "${{%s}}: an output binds only ${{parent.outputs.X}}", expr);
                continue;
            }
            spec = jv_get(sc->outputs, name);
            if (!spec && !(sc->outputs && cJSON_IsObject(sc->outputs) && cJSON_GetObjectItemCaseSensitive(
                                                                              sc->outputs, name))) {
                bai_diag_add(c->d, child, "${{%s}}: the pipeline has no output \"%s\"", expr, name);
                continue;
            }
            if (find(sc->produced, sc->n_produced, name)) {
                bai_diag_add(c->d, child, "${{%s}}: another step already writes the pipeline's output \"%s\"", expr,
                             name);
                continue;
            }
            struct val pv = { .kind = V_STEP, .step = index, .output = keep(c, strdup(m->string)), .type = type };
            add_named(c, sc->produced, &sc->n_produced, 64, name, pv);
            spec_dir = sc->dir;
        } else if (b && cJSON_IsObject(b))
            spec = b;
        else if (b && !cJSON_IsNull(b)) {
            bai_diag_add(c->d, child, "expected nothing, a mapping with mode and path, or ${{parent.outputs.X}}");
            continue;
        }
        cJSON_AddItemToObject(outs, m->string, cJSON_IsObject(spec) ? data_copy(c, spec, spec_dir, type)
                                                                     : cJSON_CreateObject());
        if (!data_type_of(jv_get(outs, m->string)))
            cJSON_AddStringToObject((cJSON *)jv_get(outs, m->string), "type", type);
        char key[260];
        snprintf(key, sizeof key, "%s.%s", step_name, m->string);
        struct val sv = { .kind = V_STEP, .step = index, .output = keep(c, strdup(m->string)), .type = type };
        add_named(c, sc->step_outs, &sc->n_step_outs, 256, key, sv);
    }
}

static void environment_variables(cJSON *doc, const cJSON *comp, const cJSON *step)
{
    cJSON *env = cJSON_CreateObject();
    const cJSON *m;
    char buf[64];

    for (int k = 0; k < 2; k++) {
        const cJSON *map = jv_get(k ? step : comp, "environment_variables");
        cJSON_ArrayForEach(m, (cJSON_IsObject(map) ? map : NULL)) {
            cJSON_DeleteItemFromObjectCaseSensitive(env, m->string);
            if (cJSON_IsString(m) || cJSON_IsNumber(m) || cJSON_IsBool(m))
                cJSON_AddStringToObject(env, m->string, scalar(m, buf, sizeof buf));
            else
                cJSON_AddItemToObject(env, m->string, cJSON_Duplicate(m, true));
        }
    }
    if (env->child)
        cJSON_AddItemToObject(doc, "environment_variables", env);
    else
        cJSON_Delete(env);
}

static void command_step(struct ctx *c, struct scope *sc, const cJSON *step, const cJSON *comp,
                         const char *comp_dir, const char *name, const char *path)
{
    struct bai_pipeline *p = c->p;

    if (p->n_steps == BAI_PIPELINE_MAX_STEPS) {
        bai_diag_add(c->d, path, "a pipeline has at most %d command steps", BAI_PIPELINE_MAX_STEPS);
        return;
    }
    const cJSON *body = comp ? comp : step;
    cJSON *doc = cJSON_CreateObject();
    size_t index = p->n_steps;
    struct bai_pl_step *s = &p->steps[index];
    memset(s, 0, sizeof *s);
    s->doc = doc;
    s->name = strdup(join(c, sc->prefix, name, ""));
    s->yaml_path = strdup(path);
    p->n_steps++;

    if (comp)
        jv_object(c->d, comp, join(c, path, ".component", ""), component_keys);
    copy_member(doc, body, "command");
    if (!jv_get(doc, "command"))
        bai_diag_add(c->d, path, "the step's component has no command");
    const cJSON *code = jv_get(body, "code");
    if (cJSON_IsString(code))
        cJSON_AddStringToObject(doc, "code", strstr(code->valuestring, "://") || !strncmp(code->valuestring, "azureml:", 8)
                                                 ? code->valuestring : under(c, comp ? comp_dir : sc->dir,
                                                                             code->valuestring));
    copy_member(doc, body, "environment");
    copy_member(doc, step, "environment");
    environment_variables(doc, comp, step);
    for (int k = 0; k < 2; k++) {
        const cJSON *from = k ? step : comp;
        copy_member(doc, from, "resources");
        copy_member(doc, from, "distribution");
    }
    if (!c->space) /* a sweep step's limits are the sweep's */
        copy_member(doc, step, "limits");
    copy_member(doc, step, "services");
    copy_member(doc, step, "identity");
    copy_member(doc, step, "queue_settings");
    const cJSON *compute = jv_get(step, "compute");
    if (cJSON_IsString(compute))
        cJSON_AddStringToObject(doc, "compute", compute->valuestring);
    else if (c->compute)
        cJSON_AddStringToObject(doc, "compute", c->compute);
    const cJSON *dn = jv_get(step, "display_name");
    cJSON_AddStringToObject(doc, "display_name", cJSON_IsString(dn) ? dn->valuestring : s->name);
    if (c->experiment)
        cJSON_AddStringToObject(doc, "experiment_name", c->experiment);

    struct command_arg a = { .index = index, .inputs = cJSON_AddObjectToObject(doc, "inputs") };
    bind_inputs(c, sc, step, comp, path, sc->dir, comp_dir, command_input, &a);
    command_outputs(c, sc, step, comp, path, name, sc->dir, index, doc);
}

/* A step whose component is a pipeline: its jobs expanded in a scope of their own, its inputs bound here. */
struct nested_arg {
    struct scope *inner;
};

static void nested_input(struct ctx *c, void *arg, const char *name, const char *decl, struct val v,
                         const char *path)
{
    struct nested_arg *a = arg;
    (void)decl;
    (void)path;
    add_named(c, a->inner->inputs, &a->inner->n_inputs, 64, name, v);
}

static void pipeline_step(struct ctx *c, struct scope *sc, const cJSON *step, const cJSON *comp,
                          const char *comp_dir, const char *name, const char *path, int depth)
{
    struct scope *inner = calloc(1, sizeof *inner);
    char child[JV_PATH_MAX], expr[256], out[128];
    const cJSON *m;

    if (!inner) {
        bai_diag_add(c->d, path, "out of memory");
        return;
    }
    if (depth >= MAX_DEPTH) {
        bai_diag_add(c->d, path, "pipeline components nest at most %d deep", MAX_DEPTH);
        free(inner);
        return;
    }
    inner->path = join(c, path, ".", "");
    inner->prefix = join(c, sc->prefix, name, ".");
    inner->dir = comp_dir;
    inner->outputs = jv_get(comp, "outputs");
    struct nested_arg a = { inner };
    bind_inputs(c, sc, step, comp, path, sc->dir, comp_dir, nested_input, &a);
    jv_child(child, path, "jobs");
    const cJSON *jobs = jv_get(comp, "jobs");
    if (!cJSON_IsObject(jobs))
        bai_diag_add(c->d, path, "the pipeline component has no jobs");
    else
        expand_jobs(c, inner, jobs, depth + 1);
    /* Its outputs are the inner steps' outputs bound to them, and may be bound on to this scope's. */
    const cJSON *given = jv_get(step, "outputs");
    for (size_t i = 0; i < inner->n_produced; i++) {
        char key[260];
        snprintf(key, sizeof key, "%s.%s", name, inner->produced[i].name);
        add_named(c, sc->step_outs, &sc->n_step_outs, 256, key, inner->produced[i].v);
        const cJSON *b = jv_get(given, inner->produced[i].name);
        jv_child_quoted(child, path, "outputs");
        if (b && expression(b, expr, sizeof expr) && sscanf(expr, "parent.outputs.%127s", out) == 1) {
            if (!cJSON_GetObjectItemCaseSensitive(sc->outputs, out))
                bai_diag_add(c->d, child, "${{%s}}: the pipeline has no output \"%s\"", expr, out);
            else
                add_named(c, sc->produced, &sc->n_produced, 64, out, inner->produced[i].v);
        }
    }
    cJSON_ArrayForEach(m, (cJSON_IsObject(given) ? given : NULL))
        if (!find(inner->produced, inner->n_produced, m->string)) {
            char outs[JV_PATH_MAX];
            jv_child(outs, path, "outputs");
            jv_child_quoted(child, outs, m->string);
            bai_diag_add(c->d, child, "no step of the pipeline component writes its output \"%.64s\"", m->string);
        }
    free(inner);
}

struct prefixed {
    struct bai_diag *d;
    const char *path;
};

static void add_prefixed(void *arg, const char *msg)
{
    struct prefixed *p = arg;
    bai_diag_add(p->d, p->path, "%s", msg);
}

/* A sweep step: its trial component bound as a command step (each search-space parameter the trial's input of
 * that name), then made the job array's command job (bai_sweep_step). Its outputs are the best trial's. */
static void sweep_step(struct ctx *c, struct scope *sc, const cJSON *step, const char *name, const char *path)
{
    const char *comp_dir;
    const cJSON *m, *comp, *space = jv_get(step, "search_space");
    char child[JV_PATH_MAX];

    if (jv_get(step, "component") || jv_get(step, "command")) {
        bai_diag_add(c->d, path, "a sweep step runs its trial: give trial: (a command component), not component "
                     "or command");
        return;
    }
    size_t faults = bai_diag_total(c->d);
    if (!jv_get(step, "trial")) {
        bai_diag_add(c->d, join(c, path, ".trial", ""), "expected the trial: a command component (./train.yml)");
        return;
    }
    comp = component_of(c, step, path, sc->dir, &comp_dir, "trial");
    if (!comp) {
        if (bai_diag_total(c->d) == faults)
            bai_diag_add(c->d, join(c, path, ".trial", ""), "expected a command component");
        return;
    }
    const cJSON *ct = jv_get(comp, "type");
    if (cJSON_IsString(ct) && strcmp(ct->valuestring, "command") != 0) {
        bai_diag_add(c->d, join(c, path, ".trial", ""), "a sweep's trial is a command component, not a %.40s one",
                     ct->valuestring);
        return;
    }
    const cJSON *decl = jv_get(comp, "inputs");
    cJSON_ArrayForEach(m, (cJSON_IsObject(space) ? space : NULL)) {
        jv_child_quoted(child, join(c, path, ".search_space", ""), m->string);
        if (!jv_get(decl, m->string))
            bai_diag_add(c->d, child, "the trial declares no input \"%.64s\" for this parameter", m->string);
        else if (jv_get(jv_get(step, "inputs"), m->string))
            bai_diag_add(c->d, child, "the step also binds the input \"%.64s\": a parameter is the search space's",
                         m->string);
    }
    size_t index = c->p->n_steps;
    c->space = cJSON_IsObject(space) ? space : NULL;
    command_step(c, sc, step, comp, comp_dir, name, path);
    c->space = NULL;
    if (c->p->n_steps == index)
        return; /* said: too many steps */
    struct bai_pl_step *s = &c->p->steps[index];
    cJSON_ArrayForEach(m, jv_get(s->doc, "outputs"))
        if (jv_get(m, "path")) {
            jv_child_quoted(child, join(c, path, ".outputs", ""), m->string);
            bai_diag_add(c->d, child, "a sweep step's output is its best trial's: bind it to no path");
        }
    struct bai_diag sd = { 0 };
    struct prefixed pre = { c->d, path };
    s->sweep = calloc(1, sizeof *s->sweep);
    if (!s->sweep)
        bai_diag_add(c->d, path, "out of memory");
    else if (bai_sweep_step(step, c->seed, s->doc, s->sweep, &sd) != 0) {
        free(s->sweep);
        s->sweep = NULL;
    }
    bai_diag_each(&sd, add_prefixed, &pre);
    bai_diag_free(&sd);
}

static const char *const refused_kinds[] = { "automl", "spark", "parallel", "data_transfer", "import", NULL };

/* Names of the steps the step's inputs read (${{parent.jobs.S.outputs.Y}}), for the order. */
static size_t step_refs(const cJSON *step, char refs[][128], size_t cap)
{
    const cJSON *inputs = jv_get(step, "inputs"), *m;
    char expr[256], name[128], out[128];
    size_t n = 0;

    cJSON_ArrayForEach(m, (cJSON_IsObject(inputs) ? inputs : NULL))
        if (n < cap && expression(m, expr, sizeof expr) &&
            sscanf(expr, "parent.jobs.%127[^.].outputs.%127s", name, out) == 2)
            snprintf(refs[n++], 128, "%s", name);
    return n;
}

static void expand_jobs(struct ctx *c, struct scope *sc, const cJSON *jobs, int depth)
{
    const cJSON *list[BAI_PIPELINE_MAX_STEPS], *m;
    size_t n = 0, state[BAI_PIPELINE_MAX_STEPS] = { 0 }, order[BAI_PIPELINE_MAX_STEPS], n_order = 0;
    char path[JV_PATH_MAX], parent[JV_PATH_MAX], refs[32][128];

    cJSON_ArrayForEach(m, jobs) {
        snprintf(parent, sizeof parent, "%sjobs", sc->path);
        jv_child_quoted(path, parent, m->string);
        if (n == BAI_PIPELINE_MAX_STEPS) {
            bai_diag_add(c->d, path, "a pipeline has at most %d steps", BAI_PIPELINE_MAX_STEPS);
            return;
        }
        if (!bai_identifier_ok(m->string) || strlen(m->string) > 64)
            bai_diag_add(c->d, path, "a step name has at most 64 letters, digits and '_', not starting with a digit");
        else if (jv_expect_object(c->d, m, path, "a mapping (a step)"))
            list[n++] = m;
    }
    /* Depth-first order with a cycle check: 0 unvisited, 1 on the path, 2 done. */
    for (size_t start = 0; start < n; start++) {
        size_t stack[BAI_PIPELINE_MAX_STEPS], next[BAI_PIPELINE_MAX_STEPS], top = 0;
        if (state[start])
            continue;
        stack[top] = start;
        next[top++] = 0;
        state[start] = 1;
        while (top) {
            size_t cur = stack[top - 1], nr = step_refs(list[cur], refs, 32);
            if (next[top - 1] >= nr) {
                state[cur] = 2;
                order[n_order++] = cur;
                top--;
                continue;
            }
            const char *ref = refs[next[top - 1]++];
            size_t j;
            for (j = 0; j < n && strcmp(list[j]->string, ref) != 0; j++)
                ;
            if (j == n)
                continue; /* unknown: said by resolve_input, with its path */
            if (state[j] == 1) {
                snprintf(parent, sizeof parent, "%sjobs", sc->path);
                jv_child_quoted(path, parent, list[cur]->string);
                snprintf(parent, sizeof parent, "%s", path);
                jv_child(path, parent, "inputs");
                char chain[512] = "";
                for (size_t k = 0; k < top; k++)
                    if (strcmp(list[stack[k]]->string, ref) == 0 || chain[0])
                        snprintf(chain + strlen(chain), sizeof chain - strlen(chain), "%s -> ",
                                 list[stack[k]]->string);
                bai_diag_add(c->d, path, "a cycle: %s%s", chain, ref);
                return;
            }
            if (state[j] == 0) {
                state[j] = 1;
                stack[top] = j;
                next[top++] = 0;
            }
        }
    }
    for (size_t k = 0; k < n_order; k++) {
        const cJSON *step = list[order[k]], *t = jv_get(step, "type");
        const char *type = cJSON_IsString(t) ? t->valuestring : "command", *comp_dir;
        snprintf(parent, sizeof parent, "%sjobs", sc->path);
        jv_child_quoted(path, parent, step->string);
        jv_object(c->d, step, path, step_keys);
        if (in_set(type, refused_kinds)) {
            bai_diag_add(c->d, join(c, path, ".type", ""), "\"%s\": a step of this kind needs Azure's own services "
                         "and cannot run on Slurm: run it in Azure ML, or replace it with a command step", type);
            continue;
        }
        if (strcmp(type, "sweep") == 0) {
            sweep_step(c, sc, step, step->string, path);
            continue;
        }
        if (strcmp(type, "command") != 0 && strcmp(type, "pipeline") != 0) {
            bai_diag_add(c->d, join(c, path, ".type", ""), "\"%.40s\": expected command, pipeline or sweep", type);
            continue;
        }
        size_t faults = bai_diag_total(c->d);
        const cJSON *comp = component_of(c, step, path, sc->dir, &comp_dir, "component");
        if (!comp && bai_diag_total(c->d) > faults)
            continue; /* said: the rest would only repeat it */
        const cJSON *ct = comp ? jv_get(comp, "type") : NULL;
        const char *ctype = cJSON_IsString(ct) ? ct->valuestring : comp ? "command" : type;
        if (strcmp(ctype, type) != 0 && !(comp && strcmp(type, "command") == 0 && !ct)) {
            bai_diag_add(c->d, join(c, path, ".component", ""), "a %s step needs a %s component, not a %.40s one",
                         type, type, ctype);
            continue;
        }
        if (strcmp(type, "pipeline") == 0) {
            if (!comp)
                bai_diag_add(c->d, path, "a pipeline step needs a component of type pipeline");
            else
                pipeline_step(c, sc, step, comp, comp_dir, step->string, path, depth);
        } else
            command_step(c, sc, step, comp, comp_dir, step->string, path);
    }
}

/* ---- the pipeline ---- */

static const char *const top_keys[] = {
    "$schema", "type", "name", "display_name", "experiment_name", "description", "tags", "settings", "jobs",
    "inputs", "outputs", NULL,
};
/* default_datestore: the misspelling Azure's own 3a_basic_pipeline carries, which Azure ML ignores; so does
 * this site (outputs without a path go to the site's directories, whatever the default datastore). */
static const char *const settings_keys[] = {
    "default_compute", "default_datastore", "default_datestore", "continue_on_step_failure", "force_rerun",
    "default_environment", NULL,
};


int bai_pipeline_parse(const char *text, size_t len, const char *file, const struct bai_settings *site,
                       uint64_t seed, struct bai_pipeline *p, struct bai_diag *d)
{
    struct ctx *c = calloc(1, sizeof *c);
    struct scope *top = calloc(1, sizeof *top);
    size_t before = bai_diag_total(d);
    const cJSON *v, *m;
    char path[JV_PATH_MAX];

    memset(p, 0, sizeof *p);
    if (!c || !top) {
        bai_diag_add(d, "", "out of memory");
        free(c);
        free(top);
        return -1;
    }
    c->p = p;
    c->seed = seed;
    c->site = site;
    c->d = d;
    cJSON *root = bai_yaml_tree(text, len, d);
    if (!root)
        goto out;
    c->trees[c->n_trees++] = root;
    if (!jv_object(d, root, "", top_keys))
        goto out;
    top->path = "";
    top->prefix = "";
    top->dir = keep(c, dir_of(file));
    if ((v = jv_get(root, "settings")) != NULL && jv_object(d, v, "settings", settings_keys)) {
        const cJSON *dc = jv_get(v, "default_compute");
        if (cJSON_IsString(dc))
            c->compute = dc->valuestring;
        jv_bool(d, v, "continue_on_step_failure", "settings", 0, &p->continue_on_step_failure);
        if (jv_get(v, "default_environment"))
            bai_diag_add(d, "settings.default_environment", "give each component its environment");
    }
    if (cJSON_IsString(jv_get(root, "experiment_name")))
        c->experiment = jv_get(root, "experiment_name")->valuestring;
    jv_string(d, root, "display_name", "", 0, &p->display_name);
    if ((v = jv_get(root, "inputs")) != NULL && jv_expect_object(d, v, "inputs", "a mapping of input names"))
        cJSON_ArrayForEach(m, v) {
            jv_child_quoted(path, "inputs", m->string);
            struct val iv = resolve_input(c, top, m, path, top->dir);
            if (iv.kind == V_STEP)
                bai_diag_add(d, path, "a pipeline's input is a value or data, not a step's output");
            else
                add_named(c, top->inputs, &top->n_inputs, 64, m->string, iv);
        }
    if ((v = jv_get(root, "outputs")) != NULL && jv_expect_object(d, v, "outputs", "a mapping of output names"))
        top->outputs = v;
    v = jv_get(root, "jobs");
    if (!v || !cJSON_IsObject(v) || !v->child)
        bai_diag_add(d, "jobs", "expected a mapping of steps");
    else
        expand_jobs(c, top, v, 0);
    /* The pipeline's outputs, as its status names them. */
    p->outputs = calloc(top->n_produced + 1, sizeof *p->outputs);
    for (size_t i = 0; p->outputs && i < top->n_produced; i++) {
        p->outputs[i].name = strdup(top->produced[i].name);
        p->outputs[i].step = top->produced[i].v.step;
        p->outputs[i].output = strdup(top->produced[i].v.output);
        p->n_outputs++;
    }
out:
    for (size_t i = 0; i < c->n_trees; i++)
        cJSON_Delete(c->trees[i]);
    for (size_t i = 0; i < c->n_strings; i++)
        free(c->strings[i]);
    free(c->strings);
    free(c);
    free(top);
    if (bai_diag_total(d) > before) {
        bai_pipeline_free(p);
        return -1;
    }
    return 0;
}

char *bai_pipeline_output_path(const struct bai_pipeline *p, size_t step, const char *output, const char *base,
                               const char *jobid)
{
    const cJSON *o = jv_get(jv_get(p->steps[step].doc, "outputs"), output), *path = jv_get(o, "path");
    char *out = NULL;

    if (cJSON_IsString(path))
        return strdup(path->valuestring);
    if (asprintf(&out, "%s/%s/%s/outputs/%s", base, p->steps[step].name, jobid, output) < 0)
        return NULL;
    return out;
}

char *bai_pipeline_step_text(const struct bai_pipeline *p, size_t i, const char *base, const char *const jobids[])
{
    const struct bai_pl_step *s = &p->steps[i];
    cJSON *doc = cJSON_Duplicate(s->doc, true);
    cJSON *inputs = doc ? cJSON_GetObjectItemCaseSensitive(doc, "inputs") : NULL;
    char *text = NULL;

    for (size_t k = 0; doc && k < s->n_links; k++) {
        cJSON *in = cJSON_GetObjectItemCaseSensitive(inputs, s->links[k].input);
        char *path = bai_pipeline_output_path(p, s->links[k].from, s->links[k].output, base,
                                              jobids[s->links[k].from]);
        if (!in || !path) {
            free(path);
            cJSON_Delete(doc);
            return NULL;
        }
        cJSON_ReplaceItemInObjectCaseSensitive(in, "path", cJSON_CreateString(path));
        free(path);
    }
    if (doc)
        text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}

void bai_pipeline_free(struct bai_pipeline *p)
{
    for (size_t i = 0; i < p->n_steps; i++) {
        struct bai_pl_step *s = &p->steps[i];
        cJSON_Delete(s->doc);
        free(s->name);
        free(s->yaml_path);
        for (size_t k = 0; k < s->n_links; k++) {
            free(s->links[k].input);
            free(s->links[k].output);
        }
        free(s->links);
        if (s->sweep)
            bai_sweep_free(s->sweep);
        free(s->sweep);
    }
    for (size_t i = 0; i < p->n_outputs; i++) {
        free(p->outputs[i].name);
        free(p->outputs[i].output);
    }
    free(p->outputs);
    free(p->display_name);
    memset(p, 0, sizeof *p);
}

bool bai_pipeline_detect(const char *text, size_t len)
{
    return bai_yaml_type_is(text, len, "pipeline");
}
