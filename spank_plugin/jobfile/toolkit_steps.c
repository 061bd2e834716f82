/* The main step of each toolkit (see toolkit_steps.h): what Batch AI's documentation says each ran. */
#include "toolkit_steps.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "batchai_jobfile.h"
#include "checks.h"
#include "sbuf.h"
#include "steps.h"
#include "toolkits.h"

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

/* The command line; exec'd when the job is checkpointable (its command is checked to be one) or the command
 * can be (checks.h), so that the signals Slurm sends the step reach the program itself (a shell between them
 * would die of SIGUSR1 or SIGTERM and take the task with it). A job of preparation alone (customToolkit
 * without a commandLine) runs `true`. */
static void command_line(struct sbuf *cmd, const struct bai_job *job)
{
    const char *c = bai_toolkit_str(&job->toolkit, "commandLine");
    if (!bai_command_execs(c ? c : "") && (job->checkpointable || bai_command_can_exec(c ? c : "")))
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
    /* A parameter server serves until it is stopped (TensorFlow's server.join()). srun's SIGTERM would kill
     * its tasks and report them ("forcing job termination ... Killed" in a job that succeeded); SIGUSR2, which
     * srun forwards, ends the server and its task's shell exits 0 on it, so srun reports nothing. Should srun
     * not end within 5 s, SIGTERM as before. Each step spans no more nodes than it has tasks (srun would warn). */
    struct sbuf server = { 0 };
    char ps_opts[64], worker_opts[64], *server_text;
    snprintf(ps_opts, sizeof ps_opts, "--nodes=%d --exact --distribution=cyclic",
             nps < job->node_count ? nps : job->node_count);
    snprintf(worker_opts, sizeof worker_opts, "--nodes=%d --exact --distribution=cyclic",
             workers < job->node_count ? workers : job->node_count);
    python_command(&server, t, site, bai_toolkit_str(t, "parameterServerCommandLineArgs"));
    server_text = sb_finish(&server);
    sb_printf(&ps, "trap 'exit 0' USR2\n%s &\nwait $!", server_text ? server_text + strlen("exec ") : "false");
    ps.failed |= !server_text;
    free(server_text);
    python_command(&worker, t, site, bai_toolkit_str(t, "workerCommandLineArgs"));
    sb_printf(b, "AZ_BATCHAI_PS_HOSTS=$(batchai_hosts %d 2222) AZ_BATCHAI_WORKER_HOSTS=$(batchai_hosts %d 2223)\n"
                 "export AZ_BATCHAI_PS_HOSTS AZ_BATCHAI_WORKER_HOSTS\n", nps, workers);
    finish_step(b, plan, site, false, nps, ps_opts, NULL, &ps);
    sb_puts(b, " &\nps_step=$!\n");
    finish_step(b, plan, site, false, workers, worker_opts, NULL, &worker);
    sb_puts(b, "\nrc=$?\nkill -USR2 \"$ps_step\" 2>/dev/null\n"
               "for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 \"$ps_step\" 2>/dev/null || break; sleep 0.5; done\n"
               "kill \"$ps_step\" 2>/dev/null\n(exit $rc)");
}

static void cntk_main(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                      const struct bai_settings *site, int ntasks)
{
    const struct bai_toolkit_settings *t = &job->toolkit;
    struct sbuf cmd = { 0 };
    const char *args = bai_toolkit_str(t, "commandLineArgs");
    if (bai_cntk_python(t))
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

/* ---- by toolkit ---- */

typedef void main_step_fn(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                          const struct bai_settings *site, int ntasks);

static const struct {
    const char *property; /* the toolkit's row in bai_toolkits[] */
    main_step_fn *main_step;
} toolkit_steps[] = {
    { "horovodSettings", mpi_python_main },
    { "customMpiSettings", custom_mpi_main },
    { "customToolkitSettings", custom_toolkit_main },
    { "pyTorchSettings", pytorch_main },
    { "tensorFlowSettings", tensorflow_main },
    { "cntkSettings", cntk_main },
    { "caffeSettings", caffe_main },
    { "caffe2Settings", caffe2_main },
    { "chainerSettings", mpi_python_main },
};

bool bai_toolkit_main_step(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                           const struct bai_settings *site, int ntasks)
{
    for (size_t i = 0; i < sizeof toolkit_steps / sizeof toolkit_steps[0]; i++)
        if (job->toolkit.kind && strcmp(job->toolkit.kind->property, toolkit_steps[i].property) == 0) {
            toolkit_steps[i].main_step(b, plan, job, site, ntasks);
            return true;
        }
    return false;
}
