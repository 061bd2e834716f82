/* Validate an Azure ML command job into the job model: see azureml.h. The walk mirrors
 * schemas/azureml-command-job.schema.json (the subset we accept); what a schema cannot say (the command's
 * references, paths of the site) is checked here. */
#include "azureml.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "jsonv.h"

/* A field with no Slurm meaning that is refused, and what to do instead. */
struct refusal {
    const char *key, *why;
};

static const struct refusal top_refused[] = {
    { "services", "interactive services (VS Code, Jupyter, TensorBoard, SSH) are not started by the site: "
                  "remove services and reach a running job's node with `srun --jobid=ID --overlap --pty bash`" },
    { "identity", "a Slurm job runs as the user who submits it, with that user's own access: remove identity" },
    { "queue_settings", "Slurm's queue decides when a job runs: remove queue_settings and give sbatch --qos or "
                        "--priority, or ask the admins for a priority map" },
    { "parent_job_name", "a step of an Azure ML pipeline: submit the command job on its own" },
    { NULL, NULL },
};
static const struct refusal resources_refused[] = {
    { "docker_args", "the site's container runtime takes no docker arguments: remove docker_args" },
    { "properties", "Azure ML's compute properties have no meaning on Slurm: remove them" },
    { "locations", "the job runs on this cluster: remove locations" },
    { NULL, NULL },
};
static const struct refusal environment_refused[] = {
    { "build", "the site builds no images: build it (docker build), have it staged on the site and give "
               "environment.image" },
    { "conda_file", "the site creates no conda environments: install the packages in the image and remove "
                    "conda_file" },
    { NULL, NULL },
};

/* jv_object over the known keys and the refused ones; each refused key present is a fault with its reason. */
static bool object_with_refusals(struct bai_diag *d, const cJSON *v, const char *path, const char *const known[],
                                 const struct refusal *refused)
{
    const char *keys[32];
    size_t n = 0;
    char child[JV_PATH_MAX];

    for (size_t i = 0; known[i]; i++)
        keys[n++] = known[i];
    for (size_t i = 0; refused[i].key; i++)
        keys[n++] = refused[i].key;
    keys[n] = NULL;
    if (!jv_object(d, v, path, keys))
        return false;
    for (size_t i = 0; refused[i].key; i++)
        if (jv_get(v, refused[i].key)) {
            jv_child(child, path, refused[i].key);
            bai_diag_add(d, child, "%s", refused[i].why);
        }
    return true;
}

/* A path the batch script writes unquoted between double quotes: letters, digits and / . _ - @ +. */
static bool path_chars_ok(const char *s)
{
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("/._-@+", *s))
            return false;
    return true;
}

static bool has_dotdot(const char *s)
{
    for (const char *q = s; (q = strstr(q, "..")) != NULL; q += 2)
        if ((q == s || q[-1] == '/') && (q[2] == '\0' || q[2] == '/'))
            return true;
    return false;
}

static char *dupn(const char *s, size_t n)
{
    return strndup(s, n);
}

/* A scalar's text as the file wrote it: YAML keeps it (yamltree.h); a JSON number or boolean is printed. */
static char *scalar_text(const cJSON *v)
{
    char buf[64];

    if (v->valuestring)
        return strdup(v->valuestring);
    if (cJSON_IsNumber(v))
        snprintf(buf, sizeof buf, "%.17g", v->valuedouble);
    else
        snprintf(buf, sizeof buf, "%s", cJSON_IsTrue(v) ? "true" : "false");
    return strdup(buf);
}

/* ---- fields ---- */

static void parse_code(struct bai_diag *d, const cJSON *root, struct bai_aml *aml)
{
    char *s = NULL;

    if (jv_string(d, root, "code", "", JV_NONEMPTY, &s) != 1)
        return;
    if (strncmp(s, "git+", 4) == 0 || strstr(s, "://"))
        bai_diag_add(d, "code", "\"%.80s\" is not a directory here: the site fetches no code; clone or copy it "
                     "beside the job file and give its directory", s);
    else if (strncmp(s, "azureml:", 8) == 0)
        bai_diag_add(d, "code", "a registered code asset (%.80s) is not available here: give the directory of the "
                     "code, relative to the job file", s);
    else if (!path_chars_ok(s))
        bai_diag_add(d, "code", "expected a directory of letters, digits and / . _ - @ +, got \"%.80s\"", s);
    else {
        aml->code = s;
        return;
    }
    free(s);
}

static void parse_environment(struct bai_diag *d, const cJSON *root, struct bai_job *job)
{
    static const char *const keys[] = { "image", "name", "version", "description", NULL };
    const cJSON *v = jv_get(root, "environment");
    char child[JV_PATH_MAX];

    if (!v)
        return;
    if (cJSON_IsString(v)) {
        if (strncmp(v->valuestring, "azureml:", 8) == 0 && jv_string(d, root, "environment", "", JV_NONEMPTY,
                                                                         &job->aml->environment) == 1)
            return;
        bai_diag_add(d, "environment", "\"%.80s\": expected environment.image, or an azureml: reference that the "
                     "site maps to an image%s", v->valuestring,
                     strncmp(v->valuestring, "file:", 5) == 0 ? " (the site reads no environment files)" : "");
        return;
    }
    if (!object_with_refusals(d, v, "environment", keys, environment_refused))
        return;
    jv_string(d, v, "name", "environment", 0, NULL);
    jv_string(d, v, "description", "environment", JV_MULTILINE, NULL);
    jv_child(child, "environment", "image");
    if (jv_string(d, v, "image", "environment", JV_NONEMPTY, &job->image) == 1)
        bai_check_image(d, child, jv_get(v, "image"), NULL);
    else if (!jv_get(v, "build") && !jv_get(v, "conda_file"))
        bai_diag_add(d, "environment", "expected an image");
}

static void parse_distribution(struct bai_diag *d, const cJSON *root, struct bai_job *job)
{
    static const char *const mpi_keys[] = { "type", "process_count_per_instance", NULL };
    static const char *const tf_keys[] = { "type", "worker_count", "parameter_server_count", NULL };
    static const char *const types[] = { "mpi", "pytorch", "tensorflow", NULL };
    const cJSON *v = jv_get(root, "distribution");
    struct bai_aml *aml = job->aml;
    char *type = NULL;
    size_t i;

    aml->per_node = 1;
    if (!v)
        return;
    if (!jv_expect_object(d, v, "distribution", "a mapping with a type"))
        return;
    if (jv_string(d, v, "type", "distribution", JV_REQUIRED, &type) != 1)
        return;
    for (i = 0; types[i] && strcmp(types[i], type) != 0; i++)
        ;
    if (!types[i]) {
        bai_diag_add(d, "distribution.type", "\"%.40s\": expected mpi, pytorch or tensorflow%s", type,
                     strcmp(type, "ray") == 0 ? " (the site starts no Ray cluster: start one in the command)" : "");
        free(type);
        return;
    }
    free(type);
    aml->dist = (enum bai_aml_dist)(i + 1);
    if (aml->dist != BAI_AML_TENSORFLOW) {
        if (jv_object(d, v, "distribution", mpi_keys))
            jv_int(d, v, "process_count_per_instance", "distribution", 1, 1024, 0, &aml->per_node);
        return;
    }
    if (!jv_object(d, v, "distribution", tf_keys))
        return;
    aml->workers = job->node_count;
    jv_int(d, v, "worker_count", "distribution", 1, BAI_JOB_MAX_NODES, 0, &aml->workers);
    jv_int(d, v, "parameter_server_count", "distribution", 0, BAI_JOB_MAX_NODES, 0, &aml->ps);
}

/* A datastore path: the share and the path in it, from azureml://datastores/NAME/paths/P,
 * wasbs://CONTAINER@ACCOUNT.blob.core.windows.net/P (abfss:// alike) or
 * https://ACCOUNT.blob.core.windows.net/CONTAINER/P. Returns false when s is none of them. */
static bool datastore_path(const char *s, char **share, const char **rest)
{
    const char *p, *end;

    if (strncmp(s, "azureml://datastores/", 21) == 0) {
        p = s + 21;
        end = strchr(p, '/');
        if (!end || strncmp(end, "/paths", 6) != 0 || (end[6] != '/' && end[6] != '\0'))
            return false;
        *rest = end + 6;
    } else if (strncmp(s, "wasbs://", 8) == 0 || strncmp(s, "wasb://", 7) == 0 || strncmp(s, "abfss://", 8) == 0) {
        p = strstr(s, "://") + 3;
        end = strchr(p, '@');
        if (!end || strchr(p, '/') < end)
            return false;
        *rest = strchr(end, '/') ? strchr(end, '/') : "";
    } else if (strncmp(s, "https://", 8) == 0 && (p = strchr(s + 8, '/')) != NULL &&
               (size_t)(p - s) > 30 && strncmp(p - 22, ".blob.core.windows.net", 22) == 0) {
        p++;
        end = p + strcspn(p, "/");
        *rest = end;
    } else {
        return false;
    }
    *share = dupn(p, (size_t)(end - p));
    return *share != NULL;
}

/* The mount of a datastore path: its share at inputs/<name> or outputs/<name>. */
static void add_datastore(struct bai_diag *d, const char *path, struct bai_job *job, struct bai_aml_io *io,
                          char *share, const char *source)
{
    struct bai_mount *m = &job->mounts[job->n_mounts];
    bool share_ok = *share && strcmp(share, ".") != 0 && strcmp(share, "..") != 0;

    for (const char *p = share; share_ok && *p; p++)
        share_ok = isalnum((unsigned char)*p) || strchr("-_.", *p);
    if (!share_ok) {
        bai_diag_add(d, path, "datastore or container \"%.64s\": expected letters, digits, '-', '_' or '.'", share);
        free(share);
        return;
    }
    m->kind = BAI_MOUNT_AZURE_BLOB;
    m->share = share;
    m->source = strdup(source);
    m->where = strdup(path);
    if (asprintf(&m->relative_path, "%s/%s", io->output ? "outputs" : "inputs", io->name) < 0)
        m->relative_path = NULL;
    io->mount = job->n_mounts++;
    if (!m->source || !m->where || !m->relative_path)
        bai_diag_add(d, path, "out of memory");
}

/* inputs.X.path / outputs.X.path: where the data is, as this site can reach it. */
static void parse_io_path(struct bai_diag *d, const char *path, const char *s, struct bai_job *job,
                          struct bai_aml_io *io)
{
    const char *rest = NULL;
    char *share = NULL;

    if (datastore_path(s, &share, &rest)) {
        rest += *rest == '/';
        io->source = BAI_AML_DATASTORE;
        io->value = strdup(rest);
        if (!path_chars_ok(rest) || has_dotdot(rest)) {
            bai_diag_add(d, path, "the path in the datastore must be letters, digits and / . _ - @ +, without "
                         "\"..\": got \"%.80s\"", rest);
            free(share);
            return;
        }
        add_datastore(d, path, job, io, share, s);
    } else if (strncmp(s, "azureml:", 8) == 0 && strncmp(s, "azureml://", 10) != 0) {
        io->source = BAI_AML_ASSET;
        io->value = strdup(s);
    } else if (strstr(s, "://") || strncmp(s, "runs:/", 6) == 0) {
        bai_diag_add(d, path, "\"%.80s\" is not data this site can reach: the site downloads nothing and knows "
                     "only datastores (azureml://datastores/NAME/paths/..., wasbs:// and blob URLs, each mapped to a "
                     "share): copy the data to a share or beside the job file and give that path", s);
    } else {
        const char *local = strncmp(s, "file:", 5) == 0 ? s + 5 : s;
        if (!*local || !path_chars_ok(local)) {
            bai_diag_add(d, path, "expected a path of letters, digits and / . _ - @ +, got \"%.80s\"", s);
            return;
        }
        io->source = BAI_AML_LOCAL;
        io->value = strdup(local);
    }
    if (!io->value)
        bai_diag_add(d, path, "out of memory");
}

static void parse_one_io(struct bai_diag *d, const char *path, const cJSON *v, struct bai_job *job,
                         struct bai_aml_io *io)
{
    static const char *const in_keys[] = { "type", "path", "mode", "description", NULL };
    static const char *const out_keys[] = { "type", "path", "mode", "description", "name", "version", NULL };
    static const char *const folder_types[] = { "uri_folder", "uri_file", "mlflow_model", "custom_model",
                                                "triton_model", NULL };
    static const char *const in_modes[] = { "ro_mount", "download", "direct", "eval_mount", "eval_download", NULL };
    static const char *const out_modes[] = { "rw_mount", "upload", "direct", NULL };
    char child[JV_PATH_MAX], *type = NULL, *mode = NULL, *p = NULL;
    const char *const *modes = io->output ? out_modes : in_modes;
    size_t i;

    if (!io->output && (cJSON_IsString(v) || cJSON_IsNumber(v) || cJSON_IsBool(v))) {
        io->source = BAI_AML_LITERAL;
        io->value = scalar_text(v);
        if (cJSON_IsString(v) && (strchr(v->valuestring, '\n') || strlen(v->valuestring) > 4096))
            bai_diag_add(d, path, "a literal input is one line of at most 4096 bytes");
        return;
    }
    if (io->output && cJSON_IsNull(v)) {
        io->source = BAI_AML_DEFAULT;
        return;
    }
    if (!cJSON_IsObject(v)) {
        bai_diag_add(d, path, "expected %s", io->output ? "nothing, or a mapping with type, path and mode"
                                                        : "a value, or a mapping with type, path and mode");
        return;
    }
    if (!jv_object(d, v, path, io->output ? out_keys : in_keys))
        return;
    jv_string(d, v, "description", path, JV_MULTILINE, NULL);
    jv_child(child, path, "type");
    if (jv_string(d, v, "type", path, 0, &type) == 1) {
        for (i = 0; folder_types[i] && strcmp(folder_types[i], type) != 0; i++)
            ;
        if (!folder_types[i])
            bai_diag_add(d, child, "\"%.40s\": expected uri_folder, uri_file, mlflow_model, custom_model or "
                         "triton_model%s", type, strcmp(type, "mltable") == 0 ? " (MLTable needs Azure ML's "
                         "runtime: give the folder as a uri_folder)" : "");
        io->file = strcmp(type, "uri_file") == 0;
        free(type);
    }
    jv_child(child, path, "mode");
    io->mode = BAI_AML_MOUNT;
    if (jv_string(d, v, "mode", path, 0, &mode) == 1) {
        for (i = 0; modes[i] && strcmp(modes[i], mode) != 0; i++)
            ;
        if (!modes[i])
            bai_diag_add(d, child, "\"%.40s\": expected one of %s", mode,
                         io->output ? "rw_mount, upload, direct" : "ro_mount, download, direct, eval_mount, "
                                                                   "eval_download");
        else if (strcmp(mode, "download") == 0 || strcmp(mode, "eval_download") == 0)
            io->mode = BAI_AML_DOWNLOAD;
        else if (strcmp(mode, "upload") == 0)
            io->mode = BAI_AML_UPLOAD;
        free(mode);
    }
    jv_child(child, path, "path");
    if (jv_string(d, v, "path", path, io->output ? JV_NONEMPTY : JV_REQUIRED | JV_NONEMPTY, &p) == 1)
        parse_io_path(d, child, p, job, io);
    else if (io->output && !jv_get(v, "path"))
        io->source = BAI_AML_DEFAULT;
    if (io->output && io->source == BAI_AML_ASSET)
        bai_diag_add(d, child, "an output is written to a datastore or a directory, not to an asset");
    free(p);
}

static void parse_io(struct bai_diag *d, const cJSON *root, struct bai_job *job, size_t cap)
{
    struct bai_aml *aml = job->aml;

    for (int output = 0; output < 2; output++) {
        const char *key = output ? "outputs" : "inputs";
        const cJSON *map = jv_get(root, key);
        char path[JV_PATH_MAX];
        if (!map || !jv_expect_object(d, map, key, "a mapping of names"))
            continue;
        for (const cJSON *m = map->child; m && aml->n_io < cap; m = m->next) {
            struct bai_aml_io *io = &aml->io[aml->n_io++];
            jv_child_quoted(path, key, m->string);
            io->output = output;
            if (!bai_identifier_ok(m->string) || strlen(m->string) > 64) {
                bai_diag_add(d, path, "expected a name of letters, digits and '_' not starting with a digit "
                             "(at most 64)");
                continue;
            }
            io->name = strdup(m->string);
            parse_one_io(d, path, m, job, io);
        }
    }
}

static void parse_env(struct bai_diag *d, const cJSON *root, struct bai_job *job)
{
    const cJSON *map = jv_get(root, "environment_variables");
    char path[JV_PATH_MAX];
    size_t n = 0;

    if (!map || !jv_expect_object(d, map, "environment_variables", "a mapping of names to values"))
        return;
    job->env = calloc((size_t)cJSON_GetArraySize(map) + 1, sizeof *job->env);
    if (!job->env) {
        bai_diag_add(d, "environment_variables", "out of memory");
        return;
    }
    for (const cJSON *m = map->child; m; m = m->next, n++) {
        struct bai_env *e = &job->env[job->n_env++];
        jv_child_quoted(path, "environment_variables", m->string);
        if (!bai_identifier_ok(m->string))
            bai_diag_add(d, path, "expected a name of letters, digits and '_' not starting with a digit");
        else if (!strncmp(m->string, "AZ_BATCHAI_", 11) || !strncmp(m->string, "SLURM_", 6) ||
                 !strncmp(m->string, "AZURE_ML_", 9))
            bai_diag_add(d, path, "names starting with AZ_BATCHAI_, AZURE_ML_ or SLURM_ are set by the system");
        e->name = strdup(m->string);
        if (cJSON_IsNumber(m) || cJSON_IsBool(m))
            e->value = scalar_text(m);
        else if (cJSON_IsString(m))
            jv_string(d, map, m->string, "environment_variables", JV_MULTILINE, &e->value);
        else
            bai_diag_add(d, path, "expected a value (a string or a number)");
        /* Azure ML has no field for it, and takes any variable: the opt-in of batchai_jobfile.h's checkpointable. */
        if (e->value && strcmp(m->string, BAI_CHECKPOINTABLE_VAR) == 0) {
            job->checkpointable = strcmp(e->value, "true") == 0;
            if (!job->checkpointable && strcmp(e->value, "false") != 0)
                bai_diag_add(d, path, "expected true or false");
        }
    }
}

/* x-batchai-sweep: {"names": [N...], "trials": [[[V...]...]...]}: the trials in chunks of at most
 * BAI_JOB_MAX_ITEMS (a job file's bound on any list), each trial one value per name. */
static void parse_sweep(struct bai_diag *d, const cJSON *root, struct bai_aml *aml)
{
    static const char *const keys[] = { "names", "trials", NULL };
    const cJSON *v = jv_get(root, BAI_AML_SWEEP_KEY), *names = NULL, *chunks = NULL, *m, *c;
    char path[JV_PATH_MAX], chunk_path[JV_PATH_MAX];
    size_t i = 0, t = 0;

    if (!v || !jv_object(d, v, BAI_AML_SWEEP_KEY, keys))
        return;
    int got_names = jv_array(d, v, "names", BAI_AML_SWEEP_KEY, &names);
    int got_trials = jv_array(d, v, "trials", BAI_AML_SWEEP_KEY, &chunks);
    if (got_names == 0 || got_trials == 0)
        bai_diag_add(d, BAI_AML_SWEEP_KEY, "expected names and trials");
    if (got_names != 1 || got_trials != 1)
        return;
    cJSON_ArrayForEach(c, chunks) {
        jv_item(chunk_path, BAI_AML_SWEEP_KEY ".trials", i++);
        if (!cJSON_IsArray(c) || !c->child) {
            bai_diag_add(d, chunk_path, "expected a list of trials (the trials come in lists of at most %d)",
                         BAI_JOB_MAX_ITEMS);
            return;
        }
        t += (size_t)cJSON_GetArraySize(c);
    }
    size_t n = (size_t)cJSON_GetArraySize(names);
    if (n == 0 || n > BAI_SWEEP_MAX_PARAMS || t == 0 || t > BAI_SWEEP_MAX_TRIALS) {
        bai_diag_add(d, BAI_AML_SWEEP_KEY, "expected 1 to %d names and 1 to %d trials", BAI_SWEEP_MAX_PARAMS,
                     BAI_SWEEP_MAX_TRIALS);
        return;
    }
    i = 0;
    cJSON_ArrayForEach(m, names) {
        jv_item(path, BAI_AML_SWEEP_KEY ".names", i);
        bool again = false;
        for (size_t k = 0; cJSON_IsString(m) && k < aml->n_sweep_params; k++)
            again = again || (aml->sweep_names[k] && strcmp(aml->sweep_names[k], m->valuestring) == 0);
        if (!cJSON_IsString(m) || !bai_identifier_ok(m->valuestring) || strlen(m->valuestring) > 64)
            bai_diag_add(d, path, "expected a parameter's name: letters, digits and '_', not starting with a digit");
        else if (again)
            bai_diag_add(d, path, "\"%s\" is named twice", m->valuestring);
        else
            aml->sweep_names[aml->n_sweep_params++] = strdup(m->valuestring);
        i++;
    }
    if (aml->n_sweep_params != n)
        return;
    aml->sweep_values = calloc(n * t, sizeof *aml->sweep_values);
    if (!aml->sweep_values) {
        bai_diag_add(d, BAI_AML_SWEEP_KEY, "out of memory");
        return;
    }
    aml->n_sweep_trials = t;
    i = 0;
    size_t ci = 0;
    cJSON_ArrayForEach(c, chunks) {
        size_t r = 0;
        jv_item(chunk_path, BAI_AML_SWEEP_KEY ".trials", ci++);
        cJSON_ArrayForEach(m, c) {
            jv_item(path, chunk_path, r++);
            if (!cJSON_IsArray(m) || (size_t)cJSON_GetArraySize(m) != n) {
                bai_diag_add(d, path, "expected a list of %zu values, one per name", n);
            } else {
                size_t k = 0;
                for (const cJSON *x = m->child; x; x = x->next, k++)
                    if (!cJSON_IsString(x) || !jv_utf8_valid(x->valuestring, strlen(x->valuestring)))
                        bai_diag_add(d, path, "expected text values (UTF-8)");
                    else
                        aml->sweep_values[i * n + k] = strdup(x->valuestring);
            }
            i++;
        }
    }
    for (i = 0; i < n * t; i++)
        if (!aml->sweep_values[i] && bai_diag_total(d) == 0) {
            bai_diag_add(d, BAI_AML_SWEEP_KEY, "out of memory");
            break;
        }
}

/* Every ${{...}} names inputs.X or outputs.X of the job. */
static void check_references(struct bai_diag *d, const struct bai_aml *aml)
{
    for (const char *p = aml->command; (p = strstr(p, "${{")) != NULL; p += 3) {
        const char *end = strstr(p, "}}");
        size_t n = end ? (size_t)(end - p - 3) : 0;
        const char *ref = p + 3;
        bool found = false;
        while (n && *ref == ' ')
            ref++, n--;
        while (n && ref[n - 1] == ' ')
            n--;
        for (size_t i = 0; end && i < aml->n_io && !found; i++) {
            const char *kind = aml->io[i].output ? "outputs." : "inputs.";
            size_t k = strlen(kind);
            found = aml->io[i].name && n == k + strlen(aml->io[i].name) && strncmp(ref, kind, k) == 0 &&
                    strncmp(ref + k, aml->io[i].name, n - k) == 0;
        }
        if (!found) {
            bai_diag_add(d, "command", "%.*s names no input or output of the job (declare it under inputs or "
                         "outputs)", end ? (int)(end - p + 2 > 80 ? 80 : end - p + 2) : 3, p);
            if (!end)
                return;
        }
    }
}

static const char *const top_keys[] = {
    "$schema", "type", "command", "code", "environment", "environment_variables", "compute", "resources",
    "distribution", "limits", "inputs", "outputs", "display_name", "experiment_name", "description", "tags",
    "name", BAI_AML_SWEEP_KEY, NULL,
};

void bai_aml_parse(const cJSON *root, struct bai_job *job, struct bai_diag *d)
{
    static const char *const resource_keys[] = { "instance_count", "shm_size", "instance_type", NULL };
    static const char *const limit_keys[] = { "timeout", NULL };
    const cJSON *v;
    char *s = NULL;
    int timeout = 0;
    size_t cap = 0;

    job->aml = calloc(1, sizeof *job->aml);
    if (!job->aml) {
        bai_diag_add(d, "", "out of memory");
        return;
    }
    if (jv_string(d, root, "type", "", 0, &s) == 1 && (strcmp(s, "pipeline") == 0 || strcmp(s, "sweep") == 0)) {
        /* A graph of jobs, or an array: one sbatch submits one job. Nothing else is said, the rest would only
         * mislead. */
        bai_diag_add(d, "type", "\"%s\": a %s is several Slurm jobs, which sbatch alone cannot submit: use "
                     "`batchai-job submit FILE` (validate, translate, status, wait and terminate take it too)", s,
                     strcmp(s, "sweep") == 0 ? "sweep (its trials a job array)" : "pipeline");
        free(s);
        return;
    }
    if (s && strcmp(s, "command") != 0)
        bai_diag_add(d, "type", "\"%.40s\": only command jobs, pipelines and sweeps (`batchai-job submit`) run here",
                     s);
    free(s);
    s = NULL;
    if (!object_with_refusals(d, root, "", top_keys, top_refused))
        return;
    jv_string(d, root, "$schema", "", 0, NULL);
    if (jv_string(d, root, "display_name", "", 0, &job->aml->display_name) == 1 &&
        strlen(job->aml->display_name) > 255)
        bai_diag_add(d, "display_name", "\"%.60s...\": a display name has at most 255 bytes (Slurm's job name)",
                     job->aml->display_name);
    if (jv_string(d, root, "experiment_name", "", 0, &job->aml->experiment) == 1 &&
        (!job->aml->experiment[0] || strlen(job->aml->experiment) > 255 ||
         strspn(job->aml->experiment, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") !=
             strlen(job->aml->experiment)))
        bai_diag_add(d, "experiment_name", "\"%.60s\": an experiment name has 1 to 255 letters, digits, '_', '-' "
                     "and '.', as in Azure ML", job->aml->experiment);
    jv_string(d, root, "name", "", 0, NULL);
    jv_string(d, root, "description", "", JV_MULTILINE, NULL);
    if ((v = jv_get(root, "tags")) != NULL)
        jv_expect_object(d, v, "tags", "a mapping");

    jv_string(d, root, "command", "", JV_REQUIRED | JV_NONEMPTY | JV_MULTILINE, &job->aml->command);
    job->node_count = 1;
    if ((v = jv_get(root, "resources")) != NULL &&
        object_with_refusals(d, v, "resources", resource_keys, resources_refused)) {
        jv_int(d, v, "instance_count", "resources", 1, BAI_JOB_MAX_NODES, 0, &job->node_count);
        jv_string(d, v, "shm_size", "resources", JV_NONEMPTY, &job->shm_size);
        /* Mapped to GPUs per node by the site's instance_type.NAME, or refused there (translate.c). */
        jv_string(d, v, "instance_type", "resources", JV_NONEMPTY, &job->aml->instance_type);
    }
    job->max_wall_seconds = BAI_JOB_DEFAULT_WALL_SECONDS;
    if ((v = jv_get(root, "limits")) != NULL && jv_object(d, v, "limits", limit_keys) &&
        jv_int(d, v, "timeout", "limits", 1, BAI_JOB_MAX_DAYS * 86400L, 0, &timeout) == 1)
        job->max_wall_seconds = timeout;
    if (jv_string(d, root, "compute", "", JV_NONEMPTY, &s) == 1) {
        const char *name = strncmp(s, "azureml:", 8) == 0 ? s + 8 : s;
        job->cluster_id = strdup(name);
        if (!*name || !path_chars_ok(name) || strchr(name, '/'))
            bai_diag_add(d, "compute", "expected a compute name (letters, digits, . _ - @ +), got \"%.60s\"", s);
        free(s);
    }
    parse_code(d, root, job->aml);
    parse_environment(d, root, job);
    parse_distribution(d, root, job);
    parse_env(d, root, job);
    parse_sweep(d, root, job->aml);
    if (job->checkpointable && job->aml->command)
        bai_check_one_command(d, "command", job->aml->command);
    for (int k = 0; k < 2; k++)
        if ((v = jv_get(root, k ? "outputs" : "inputs")) != NULL && cJSON_IsObject(v))
            cap += (size_t)cJSON_GetArraySize(v);
    job->aml->io = calloc(cap + 1, sizeof *job->aml->io);
    job->mounts = calloc(cap + 1, sizeof *job->mounts);
    if (!job->aml->io || !job->mounts) {
        bai_diag_add(d, "", "out of memory");
        return;
    }
    parse_io(d, root, job, cap);
    if (job->aml->command)
        check_references(d, job->aml);
}

int bai_aml_task_count(const struct bai_job *job)
{
    const struct bai_aml *aml = job->aml;

    if (aml->dist == BAI_AML_TENSORFLOW)
        return aml->workers + aml->ps;
    return job->node_count * aml->per_node;
}

void bai_aml_free(struct bai_aml *aml)
{
    if (!aml)
        return;
    for (size_t i = 0; i < aml->n_io; i++) {
        free(aml->io[i].name);
        free(aml->io[i].value);
    }
    free(aml->io);
    for (size_t i = 0; i < aml->n_sweep_params; i++)
        free(aml->sweep_names[i]);
    for (size_t i = 0; aml->sweep_values && i < aml->n_sweep_trials * aml->n_sweep_params; i++)
        free(aml->sweep_values[i]);
    free(aml->sweep_values);
    free(aml->experiment);
    free(aml->display_name);
    free(aml->command);
    free(aml->code);
    free(aml->environment);
    free(aml->instance_type);
    free(aml);
}
