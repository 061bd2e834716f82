/* The leaves of planning: see steps.h. */
#include "steps.h"

#include <stdlib.h>

#include "sbuf.h"

/* The failing task waits a second before it exits: srun ends the step when a task fails, and may be gone before
 * the line on this task's stderr, which travels apart from its exit status, reaches it. */
const char bai_node_check[] =
    "[ \"${" BAI_PREPARED_VAR "-}\" = \"$SLURM_JOB_ID:$SLURMD_NODENAME\" ] || { echo \"batchai: job $SLURM_JOB_ID: "
    "node $SLURMD_NODENAME ${" BAI_UNPREPARED_VAR "-was not prepared}\" >&2; sleep 1; exit 1; }";

/* One srun step: options, then the command, evaluated by /bin/sh inside each task so that per-task values
 * (AZ_BATCHAI_TASK_INDEX, RANK) expand where they are true, as they did under Batch AI's launcher. */
void bai_plan_step(struct sbuf *b, const struct bai_plan *plan, const struct bai_settings *site, bool mpi,
                   int ntasks, const char *extra_opts, const char *prelude, const char *command)
{
    struct sbuf cmd = { 0 };
    char *text;

    sb_puts(b, "srun");
    /* MPI ranks wait for each other: one that dies must end the step, not leave the rest waiting until the
     * wall-clock limit. */
    if (mpi)
        sb_printf(b, " --mpi=%s --kill-on-bad-exit=1", site->mpi);
    sb_printf(b, " --ntasks=%d", ntasks);
    /* Each rank its own GPU: Slurm sets the task's CUDA_VISIBLE_DEVICES and, under ConstrainDevices=yes, its
     * devices cgroup to that GPU alone. */
    if (plan->gpu_per_rank)
        sb_puts(b, " --gpus-per-task=1");
    if (extra_opts)
        sb_printf(b, " %s", extra_opts);
    if (plan->workdir) {
        sb_puts(b, " --chdir=");
        sb_shell_quote(b, plan->workdir);
    }
    if (plan->container)
        sb_printf(b, " %s", plan->container);
    /* The check, the environment, the command: each on lines of its own, so that the command reads as the
     * user wrote it. */
    sb_printf(&cmd, "%s\nexport AZ_BATCHAI_TASK_INDEX=$SLURM_PROCID", bai_node_check);
    if (prelude)
        sb_printf(&cmd, " %s", prelude);
    if (plan->secrets_file) {
        /* Secrets reach this step's tasks only, from the job's 0600 file: never srun's environment. */
        char *secrets = bai_expand_jobid(plan->secrets_file, "$SLURM_JOB_ID");
        sb_printf(&cmd, "\n. %s", secrets ? secrets : "");
        b->failed |= !secrets;
        free(secrets);
    }
    sb_printf(&cmd, "\n%s", command);
    text = sb_finish(&cmd);
    if (!text) {
        b->failed = true;
        return;
    }
    sb_puts(b, " /bin/sh -c ");
    sb_shell_quote(b, text);
    free(text);
}

/* The rendezvous port is the job's own, 20000 + job id mod 10000 (below Linux's ephemeral ports): with one
 * fixed port, two jobs whose first node is the same node met at one rendezvous, or the second failed to bind. */
void bai_pytorch_rendezvous(struct sbuf *b, int world_size)
{
    sb_printf(b, "MASTER_ADDR=$(batchai_addrs | head -n 1)\n"
                 "export MASTER_ADDR MASTER_PORT=$((20000 + SLURM_JOB_ID %% 10000)) WORLD_SIZE=%d", world_size);
}

