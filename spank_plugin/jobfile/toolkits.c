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

static void pytorch_rules(struct bai_diag *d, const char *path, struct bai_toolkit_settings *t, int node_count)
{
    static const char *const backends[] = { "TCP", "Gloo", "MPI", NULL };
    char child[JV_PATH_MAX];
    (void)node_count;
    jv_child(child, path, "communicationBackend");
    if (t->communication_backend && !one_of(t->communication_backend, backends))
        bai_diag_add(d, child, "expected one of \"TCP\", \"Gloo\", \"MPI\"");
}

static void tensorflow_rules(struct bai_diag *d, const char *path, struct bai_toolkit_settings *t, int node_count)
{
    char child[JV_PATH_MAX];
    jv_child(child, path, "parameterServerCount");
    if (node_count > 0 && t->ps_count > node_count)
        bai_diag_add(d, child, "expected at most nodeCount (%d) parameter servers, got %d", node_count, t->ps_count);
}

static void cntk_rules(struct bai_diag *d, const char *path, struct bai_toolkit_settings *t, int node_count)
{
    static const char *const languages[] = { "BrainScript", "Python", NULL };
    char child[JV_PATH_MAX];
    (void)node_count;
    jv_child(child, path, "languageType");
    if (t->language_type && !one_of(t->language_type, languages)) {
        bai_diag_add(d, child, "expected \"BrainScript\" or \"Python\"");
    } else if ((t->language_type && strcasecmp(t->language_type, "Python") == 0) ||
               (!t->language_type && t->python_script && !t->config_file)) {
        /* Batch AI took a Python script with no languageType as Python (the official CNTK Python recipe gives
         * none): say so, for the translation. */
        if (!t->language_type && !(t->language_type = strdup("Python")))
            bai_diag_add(d, path, "out of memory");
        if (!t->python_script)
            bai_diag_add(d, path, "languageType \"Python\" needs pythonScriptFilePath");
        if (t->config_file)
            bai_diag_add(d, path, "configFilePath can only be given with languageType \"BrainScript\"");
    } else {
        if (!t->config_file)
            bai_diag_add(d, path, "languageType \"BrainScript\" (the default) needs configFilePath");
        if (t->python_script || t->python_interpreter)
            bai_diag_add(d, path, "pythonScriptFilePath and pythonInterpreterPath need languageType \"Python\"");
    }
}

static void caffe_rules(struct bai_diag *d, const char *path, struct bai_toolkit_settings *t, int node_count)
{
    (void)node_count;
    if (!t->config_file == !t->python_script)
        bai_diag_add(d, path, "expected exactly one of configFilePath and pythonScriptFilePath");
    if (t->python_interpreter && !t->python_script)
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
    const struct bai_toolkit_settings *t = &job->toolkit;
    if (job->node_count == 1 && !t->worker_count && !t->ps_count)
        return 1;
    return (t->worker_count ? t->worker_count : job->node_count) + (t->ps_count ? t->ps_count : 1);
}

/* ---- main steps ---- */

/* "exec <python> <script> <args>" as shell text into b. The interpreter and the script are one word each, in
 * double quotes, where only the $NAME / ${NAME} references that bai_shell_path_ok() lets through expand (per
 * task, as Batch AI expanded them); the arguments are the user's shell text. */
static void python_command(struct sbuf *b, const struct bai_toolkit_settings *t, const struct bai_settings *site,
                           const char *args)
{
    sb_printf(b, "exec \"%s\" \"%s\"", t->python_interpreter ? t->python_interpreter : site->python,
              t->python_script);
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
    python_command(&cmd, &job->toolkit, site, job->toolkit.command_line_args);
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

bool bai_runs_bundled_trainer(const struct bai_job *job)
{
    const char *c = job->aml ? NULL : job->toolkit.command_line;
    if (!c)
        return false;
    c += strspn(c, " \t");
    return strncmp(c, "cifar-train", 11) == 0 && (c[11] == ' ' || !c[11]) && !strpbrk(c, ";&|<>`()\n\\") &&
           strncmp(c + 11 + strspn(c + 11, " \t"), "evaluate", 8) != 0;
}

/* The command line, or the bundled trainer's step: exec'd, so that the signals Slurm sends the step reach
 * cifar-train itself (a shell between them would die of SIGUSR1 or SIGTERM and take the task with it), and
 * resuming by default from the newest checkpoint it finds, so that a requeued job carries on (an explicit
 * --resume later on the line wins). A job of preparation alone (customToolkit without a commandLine) runs
 * `true`. */
static void command_line(struct sbuf *cmd, const struct bai_job *job)
{
    const char *c = job->toolkit.command_line;
    if (bai_runs_bundled_trainer(job))
        sb_printf(cmd, "exec cifar-train --resume auto%s", c + strspn(c, " \t") + 11);
    else
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
    bool mpi = t->communication_backend && strcasecmp(t->communication_backend, "MPI") == 0;
    if (mpi || ntasks == 1) {
        python_step(b, plan, job, site, ntasks, mpi);
        return;
    }
    /* TCP/Gloo: torch.distributed's rendezvous on the first node; a task's rank is its Slurm task id. */
    struct sbuf cmd = { 0 };
    python_command(&cmd, t, site, t->command_line_args);
    bai_pytorch_rendezvous(b, ntasks);
    sb_printf(b, " AZ_BATCHAI_PYTORCH_BACKEND=%s\nexport AZ_BATCHAI_PYTORCH_INIT_METHOD=tcp://$MASTER_ADDR:$MASTER_PORT\n",
              t->communication_backend ? t->communication_backend : "gloo");
    finish_step(b, plan, site, false, ntasks, NULL, "RANK=$SLURM_PROCID", &cmd);
}

static void tensorflow_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                            const struct bai_settings *site, int ntasks)
{
    const struct bai_toolkit_settings *t = &job->toolkit;
    int workers = t->worker_count ? t->worker_count : job->node_count;
    int nps = t->ps_count ? t->ps_count : 1;
    struct sbuf ps = { 0 }, worker = { 0 };
    if (ntasks == 1) {
        python_command(&worker, t, site, t->master_args);
        finish_step(b, plan, site, false, 1, NULL, NULL, &worker);
        return;
    }
    /* Parameter servers and workers as two steps; the job ends when the workers do. Both are laid out
     * cyclically over the job's nodes, as batchai_hosts lists them: task i of each role runs on node i mod N,
     * where its AZ_BATCHAI_*_HOSTS entry says it is. */
    python_command(&ps, t, site, t->ps_args);
    python_command(&worker, t, site, t->worker_args);
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
    if (t->language_type && strcasecmp(t->language_type, "Python") == 0)
        python_command(&cmd, t, site, t->command_line_args);
    else
        program_command(&cmd, "cntk configFile=", t->config_file, t->command_line_args);
    finish_step(b, plan, site, true, ntasks, NULL, NULL, &cmd);
}

static void caffe_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                       const struct bai_settings *site, int ntasks)
{
    const struct bai_toolkit_settings *t = &job->toolkit;
    struct sbuf cmd = { 0 };
    if (t->python_script)
        python_command(&cmd, t, site, t->command_line_args);
    else
        program_command(&cmd, "caffe train --solver=", t->config_file, t->command_line_args);
    finish_step(b, plan, site, ntasks > 1, ntasks, NULL, NULL, &cmd);
}

/* ---- the table ---- */

#define KEYS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define PYTHON "!pythonScriptFilePath", "pythonInterpreterPath", "commandLineArgs"

/* In the order messages list them. */
const struct bai_toolkit bai_toolkits[] = {
    { "horovodSettings", KEYS(PYTHON, "processCount"), NULL, NULL, mpi_python_main },
    { "customMpiSettings", KEYS("!commandLine", "processCount"), NULL, NULL, custom_mpi_main },
    /* commandLine is optional in 2018-05-01 */
    { "customToolkitSettings", KEYS("commandLine"), NULL, one_task, custom_toolkit_main },
    { "pyTorchSettings", KEYS(PYTHON, "processCount", "communicationBackend"), pytorch_rules, NULL, pytorch_main },
    { "tensorFlowSettings",
      KEYS("!pythonScriptFilePath", "pythonInterpreterPath", "masterCommandLineArgs", "workerCommandLineArgs",
           "parameterServerCommandLineArgs", "workerCount", "parameterServerCount"),
      tensorflow_rules, tensorflow_tasks, tensorflow_main },
    { "cntkSettings",
      KEYS("languageType", "configFilePath", "pythonScriptFilePath", "pythonInterpreterPath", "commandLineArgs",
           "processCount"),
      cntk_rules, NULL, cntk_main },
    { "caffeSettings",
      KEYS("configFilePath", "pythonScriptFilePath", "pythonInterpreterPath", "commandLineArgs", "processCount"),
      caffe_rules, NULL, caffe_main },
    { "caffe2Settings", KEYS(PYTHON), NULL, one_task, caffe2_main },
    { "chainerSettings", KEYS(PYTHON, "processCount"), NULL, NULL, mpi_python_main },
};
const size_t bai_toolkit_count = sizeof bai_toolkits / sizeof bai_toolkits[0];
