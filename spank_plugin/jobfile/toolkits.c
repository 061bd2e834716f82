/* The toolkit table (see toolkits.h): what Batch AI's documentation says of each toolkit, and the Slurm step
 * each becomes. */
#include "toolkits.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "job.h"
#include "jsonv.h"
#include "sbuf.h"
#include "settings.h"
#include "translate.h"

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
static bool cntk_python(const struct bai_toolkit_settings *t)
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
    } else if (cntk_python(t)) {
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

/* ---- main steps ---- */

/* "exec <python> <script> <args>" as shell text into b. The interpreter and the script are one word each, in
 * double quotes, where only the $NAME / ${NAME} references that bai_shell_path_ok() lets through expand (per
 * task, as Batch AI expanded them); the arguments are the user's shell text. */
static void python_command(struct sbuf *b, const struct bai_toolkit_settings *t, const struct bai_settings *site,
                           const char *args)
{
    const char *interpreter = bai_toolkit_str(t, "pythonInterpreterPath");
    sb_printf(b, "exec \"%s\" \"%s\"", interpreter ? interpreter : site->python,
              bai_toolkit_str(t, "pythonScriptFilePath"));
    if (args && *args)
        sb_printf(b, " %s", args);
}

/* "exec <program> <option>"<file>"[ <args>]" as shell text into b. */
static void program_command(struct sbuf *b, const char *program_option, const char *file, const char *args)
{
    sb_printf(b, "exec %s\"%s\"", program_option, file);
    if (args)
        sb_printf(b, " %s", args);
}

/* One step running `command` (NULL after an allocation failure marks b). */
static void finish_step(struct sbuf *b, const struct bai_plan *plan, const struct bai_settings *site, bool mpi,
                        int ntasks, const char *extra_opts, const char *prelude, struct sbuf *command)
{
    char *text = sb_finish(command);
    if (!text) {
        b->failed = true;
        return;
    }
    bai_plan_step(b, plan, site, mpi, ntasks, extra_opts, prelude, text);
    free(text);
}

/* A python script, as an MPI step (mpi) or a plain one. */
static void python_step(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                        const struct bai_settings *site, int ntasks, bool mpi)
{
    struct sbuf cmd = { 0 };
    python_command(&cmd, &job->toolkit, site, bai_toolkit_str(&job->toolkit, "commandLineArgs"));
    finish_step(b, plan, site, mpi, ntasks, NULL, NULL, &cmd);
}

static void mpi_python_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                            const struct bai_settings *site, int ntasks)
{
    python_step(b, plan, job, site, ntasks, true);
}

static void caffe2_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                        const struct bai_settings *site, int ntasks)
{
    (void)ntasks;
    python_step(b, plan, job, site, 1, false);
}

/* The command line; exec'd when the job is checkpointable, so that the signals Slurm sends the step reach the
 * program itself (a shell between them would die of SIGUSR1 or SIGTERM and take the task with it). A job of
 * preparation alone (customToolkit without a commandLine) runs `true`. */
static void command_line(struct sbuf *cmd, const struct bai_job *job)
{
    const char *c = bai_toolkit_str(&job->toolkit, "commandLine");
    if (job->checkpointable && !bai_command_execs(c ? c : ""))
        sb_puts(cmd, "exec ");
    sb_puts(cmd, c ? c : "true");
}

static void custom_mpi_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                            const struct bai_settings *site, int ntasks)
{
    struct sbuf cmd = { 0 };
    command_line(&cmd, job);
    finish_step(b, plan, site, true, ntasks, NULL, NULL, &cmd);
}

static void custom_toolkit_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                                const struct bai_settings *site, int ntasks)
{
    struct sbuf cmd = { 0 };
    (void)ntasks;
    command_line(&cmd, job);
    finish_step(b, plan, site, false, 1, "--nodes=1", NULL, &cmd);
}

static void pytorch_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                         const struct bai_settings *site, int ntasks)
{
    const struct bai_toolkit_settings *t = &job->toolkit;
    const char *backend = bai_toolkit_str(t, "communicationBackend");
    bool mpi = backend && strcasecmp(backend, "MPI") == 0;
    if (mpi || ntasks == 1) {
        python_step(b, plan, job, site, ntasks, mpi);
        return;
    }
    /* TCP/Gloo: torch.distributed's rendezvous on the first node; a task's rank is its Slurm task id. */
    struct sbuf cmd = { 0 };
    python_command(&cmd, t, site, bai_toolkit_str(t, "commandLineArgs"));
    bai_pytorch_rendezvous(b, ntasks);
    sb_printf(b, " AZ_BATCHAI_PYTORCH_BACKEND=%s\nexport AZ_BATCHAI_PYTORCH_INIT_METHOD=tcp://$MASTER_ADDR:$MASTER_PORT\n",
              backend ? backend : "gloo");
    finish_step(b, plan, site, false, ntasks, NULL, "RANK=$SLURM_PROCID", &cmd);
}

static void tensorflow_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                            const struct bai_settings *site, int ntasks)
{
    const struct bai_toolkit_settings *t = &job->toolkit;
    int workers = bai_toolkit_int(t, "workerCount"), nps = bai_toolkit_int(t, "parameterServerCount");
    workers = workers ? workers : job->node_count;
    nps = nps ? nps : 1;
    struct sbuf ps = { 0 }, worker = { 0 };
    if (ntasks == 1) {
        python_command(&worker, t, site, bai_toolkit_str(t, "masterCommandLineArgs"));
        finish_step(b, plan, site, false, 1, NULL, NULL, &worker);
        return;
    }
    /* Parameter servers and workers as two steps; the job ends when the workers do. Both are laid out
     * cyclically over the job's nodes, as batchai_hosts lists them: task i of each role runs on node i mod N,
     * where its AZ_BATCHAI_*_HOSTS entry says it is. */
    python_command(&ps, t, site, bai_toolkit_str(t, "parameterServerCommandLineArgs"));
    python_command(&worker, t, site, bai_toolkit_str(t, "workerCommandLineArgs"));
    sb_printf(b, "AZ_BATCHAI_PS_HOSTS=$(batchai_hosts %d 2222) AZ_BATCHAI_WORKER_HOSTS=$(batchai_hosts %d 2223)\n"
                 "export AZ_BATCHAI_PS_HOSTS AZ_BATCHAI_WORKER_HOSTS\n", nps, workers);
    finish_step(b, plan, site, false, nps, "--exact --distribution=cyclic", NULL, &ps);
    sb_puts(b, " &\nps_step=$!\n");
    finish_step(b, plan, site, false, workers, "--exact --distribution=cyclic", NULL, &worker);
    sb_puts(b, "\nrc=$?\nkill \"$ps_step\" 2>/dev/null\n(exit $rc)");
}

static void cntk_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                      const struct bai_settings *site, int ntasks)
{
    const struct bai_toolkit_settings *t = &job->toolkit;
    struct sbuf cmd = { 0 };
    const char *args = bai_toolkit_str(t, "commandLineArgs");
    if (cntk_python(t))
        python_command(&cmd, t, site, args);
    else
        program_command(&cmd, "cntk configFile=", bai_toolkit_str(t, "configFilePath"), args);
    finish_step(b, plan, site, true, ntasks, NULL, NULL, &cmd);
}

static void caffe_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                       const struct bai_settings *site, int ntasks)
{
    const struct bai_toolkit_settings *t = &job->toolkit;
    struct sbuf cmd = { 0 };
    const char *args = bai_toolkit_str(t, "commandLineArgs");
    if (bai_toolkit_str(t, "pythonScriptFilePath"))
        python_command(&cmd, t, site, args);
    else
        program_command(&cmd, "caffe train --solver=", bai_toolkit_str(t, "configFilePath"), args);
    finish_step(b, plan, site, ntasks > 1, ntasks, NULL, NULL, &cmd);
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
    { "horovodSettings", KEYS(PYTHON, PROCESSES), NULL, NULL, mpi_python_main },
    { "customMpiSettings", KEYS(REQ("commandLine", TEXT), PROCESSES), command_rules, NULL, custom_mpi_main },
    /* commandLine is optional in 2018-05-01 */
    { "customToolkitSettings", KEYS(OPT("commandLine", TEXT)), command_rules, one_task, custom_toolkit_main },
    { "pyTorchSettings", KEYS(PYTHON, PROCESSES, OPT("communicationBackend", LINE)), pytorch_rules, NULL,
      pytorch_main },
    { "tensorFlowSettings",
      KEYS(REQ("pythonScriptFilePath", PATH), OPT("pythonInterpreterPath", PATH), OPT("masterCommandLineArgs", TEXT),
           OPT("workerCommandLineArgs", TEXT), OPT("parameterServerCommandLineArgs", TEXT), OPT("workerCount", INT),
           OPT("parameterServerCount", INT)),
      tensorflow_rules, tensorflow_tasks, tensorflow_main },
    { "cntkSettings",
      KEYS(OPT("languageType", LINE), OPT("configFilePath", PATH), OPT("pythonScriptFilePath", PATH),
           OPT("pythonInterpreterPath", PATH), OPT("commandLineArgs", TEXT), PROCESSES),
      cntk_rules, NULL, cntk_main },
    { "caffeSettings",
      KEYS(OPT("configFilePath", PATH), OPT("pythonScriptFilePath", PATH), OPT("pythonInterpreterPath", PATH),
           OPT("commandLineArgs", TEXT), PROCESSES),
      caffe_rules, NULL, caffe_main },
    { "caffe2Settings", KEYS(PYTHON), NULL, one_task, caffe2_main },
    { "chainerSettings", KEYS(PYTHON, PROCESSES), NULL, NULL, mpi_python_main },
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
