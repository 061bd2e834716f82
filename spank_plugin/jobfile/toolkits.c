/* The toolkit table (see toolkits.h): what Batch AI's documentation says of each toolkit's settings;
 * toolkit_steps.c has the Slurm step each becomes. */
#include "toolkits.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "batchai_jobfile.h"
#include "checks.h"
#include "jsonv.h"

/* ---- rules ---- */

static bool one_of(const char *s, const char *const options[])
{
    for (size_t i = 0; options[i]; i++)
        if (strcasecmp(s, options[i]) == 0)
            return true;
    return false;
}

static void pytorch_rules(struct bai_diag *d, const char *path, const struct bai_job *job)
{
    static const char *const backends[] = { "TCP", "Gloo", "MPI", NULL };
    const char *backend = bai_toolkit_str(&job->toolkit, "communicationBackend");
    char child[JV_PATH_MAX];
    jv_child(child, path, "communicationBackend");
    if (backend && !one_of(backend, backends))
        bai_diag_add(d, child, "expected one of \"TCP\", \"Gloo\", \"MPI\"");
}

static int tensorflow_tasks(const struct bai_job *job);

static void tensorflow_rules(struct bai_diag *d, const char *path, const struct bai_job *job)
{
    int nps = bai_toolkit_int(&job->toolkit, "parameterServerCount");
    char child[JV_PATH_MAX];
    jv_child(child, path, "parameterServerCount");
    if (job->node_count > 0 && nps > job->node_count)
        bai_diag_add(d, child, "expected at most nodeCount (%d) parameter servers, got %d", job->node_count, nps);
    /* Its parameter servers and workers are two steps: the one the warning would go to is not the job's. */
    if (job->checkpointable && tensorflow_tasks(job) > 1)
        bai_diag_add(d, path, "parameter servers and workers run as two steps: " BAI_CHECKPOINTABLE_KEY
                     " takes a job of one step (a single task)");
}

/* A command line that is exec'd (a checkpointable job's) is one command. */
static void command_rules(struct bai_diag *d, const char *path, const struct bai_job *job)
{
    const char *c = bai_toolkit_str(&job->toolkit, "commandLine");
    char child[JV_PATH_MAX];
    jv_child(child, path, "commandLine");
    if (job->checkpointable)
        bai_check_one_command(d, c ? child : path, c ? c : "");
}

/* Is it a Python job? languageType says; without one, Batch AI took a Python script with no config file as
 * Python (the official CNTK Python recipe gives none). */
bool bai_cntk_python(const struct bai_toolkit_settings *t)
{
    const char *language = bai_toolkit_str(t, "languageType");
    if (language)
        return strcasecmp(language, "Python") == 0;
    return bai_toolkit_str(t, "pythonScriptFilePath") && !bai_toolkit_str(t, "configFilePath");
}

static void cntk_rules(struct bai_diag *d, const char *path, const struct bai_job *job)
{
    const struct bai_toolkit_settings *t = &job->toolkit;
    static const char *const languages[] = { "BrainScript", "Python", NULL };
    const char *language = bai_toolkit_str(t, "languageType");
    bool script = bai_toolkit_str(t, "pythonScriptFilePath"), config = bai_toolkit_str(t, "configFilePath");
    char child[JV_PATH_MAX];
    jv_child(child, path, "languageType");
    if (language && !one_of(language, languages)) {
        bai_diag_add(d, child, "expected \"BrainScript\" or \"Python\"");
    } else if (bai_cntk_python(t)) {
        if (!script)
            bai_diag_add(d, path, "languageType \"Python\" needs pythonScriptFilePath");
        if (config)
            bai_diag_add(d, path, "configFilePath can only be given with languageType \"BrainScript\"");
    } else {
        if (!config)
            bai_diag_add(d, path, "languageType \"BrainScript\" (the default) needs configFilePath");
        if (script || bai_toolkit_str(t, "pythonInterpreterPath"))
            bai_diag_add(d, path, "pythonScriptFilePath and pythonInterpreterPath need languageType \"Python\"");
    }
}

static void caffe_rules(struct bai_diag *d, const char *path, const struct bai_job *job)
{
    const struct bai_toolkit_settings *t = &job->toolkit;
    bool script = bai_toolkit_str(t, "pythonScriptFilePath");
    if (!bai_toolkit_str(t, "configFilePath") == !script)
        bai_diag_add(d, path, "expected exactly one of configFilePath and pythonScriptFilePath");
    if (bai_toolkit_str(t, "pythonInterpreterPath") && !script)
        bai_diag_add(d, path, "pythonInterpreterPath needs pythonScriptFilePath");
}

/* ---- task counts ---- */

static int one_task(const struct bai_job *job)
{
    (void)job;
    return 1;
}

/* Workers and parameter servers (one task on a single node with neither given). */
static int tensorflow_tasks(const struct bai_job *job)
{
    int workers = bai_toolkit_int(&job->toolkit, "workerCount");
    int nps = bai_toolkit_int(&job->toolkit, "parameterServerCount");
    if (job->node_count == 1 && !workers && !nps)
        return 1;
    return (workers ? workers : job->node_count) + (nps ? nps : 1);
}

/* ---- the table ---- */

/* A row's keys: the kind of value each takes (toolkits.h), required or not. */
#define REQ(name, value) { name, BAI_TK_##value, true }
#define OPT(name, value) { name, BAI_TK_##value, false }
#define KEYS(...) ((const struct bai_toolkit_key[]){ __VA_ARGS__, { NULL, BAI_TK_LINE, false } })
#define PYTHON REQ("pythonScriptFilePath", PATH), OPT("pythonInterpreterPath", PATH), OPT("commandLineArgs", TEXT)
#define PROCESSES OPT("processCount", INT)

/* In the order messages list them. */
const struct bai_toolkit bai_toolkits[] = {
    { "horovodSettings", KEYS(PYTHON, PROCESSES), NULL, NULL },
    { "customMpiSettings", KEYS(REQ("commandLine", TEXT), PROCESSES), command_rules, NULL },
    /* commandLine is optional in 2018-05-01 */
    { "customToolkitSettings", KEYS(OPT("commandLine", TEXT)), command_rules, one_task },
    { "pyTorchSettings", KEYS(PYTHON, PROCESSES, OPT("communicationBackend", LINE)), pytorch_rules, NULL },
    { "tensorFlowSettings",
      KEYS(REQ("pythonScriptFilePath", PATH), OPT("pythonInterpreterPath", PATH), OPT("masterCommandLineArgs", TEXT),
           OPT("workerCommandLineArgs", TEXT), OPT("parameterServerCommandLineArgs", TEXT), OPT("workerCount", INT),
           OPT("parameterServerCount", INT)),
      tensorflow_rules, tensorflow_tasks },
    { "cntkSettings",
      KEYS(OPT("languageType", LINE), OPT("configFilePath", PATH), OPT("pythonScriptFilePath", PATH),
           OPT("pythonInterpreterPath", PATH), OPT("commandLineArgs", TEXT), PROCESSES),
      cntk_rules, NULL },
    { "caffeSettings",
      KEYS(OPT("configFilePath", PATH), OPT("pythonScriptFilePath", PATH), OPT("pythonInterpreterPath", PATH),
           OPT("commandLineArgs", TEXT), PROCESSES),
      caffe_rules, NULL },
    { "caffe2Settings", KEYS(PYTHON), NULL, one_task },
    { "chainerSettings", KEYS(PYTHON, PROCESSES), NULL, NULL },
};
const size_t bai_toolkit_count = sizeof bai_toolkits / sizeof bai_toolkits[0];

/* ---- reading a job's values ---- */

static const union bai_toolkit_field *field(const struct bai_toolkit_settings *t, const char *key, bool count)
{
    for (size_t i = 0; t->kind && i < BAI_TOOLKIT_MAX_KEYS && t->kind->keys[i].name; i++)
        if (strcmp(t->kind->keys[i].name, key) == 0)
            return (t->kind->keys[i].value == BAI_TK_INT) == count ? &t->value[i] : NULL;
    return NULL;
}

const char *bai_toolkit_str(const struct bai_toolkit_settings *t, const char *key)
{
    const union bai_toolkit_field *f = field(t, key, false);
    return f ? f->str : NULL;
}

int bai_toolkit_int(const struct bai_toolkit_settings *t, const char *key)
{
    const union bai_toolkit_field *f = field(t, key, true);
    return f ? f->count : 0;
}

const char *bai_toolkit_name(const struct bai_toolkit *kind)
{
    return kind->property;
}
