/* The leaves of planning, which the job formats' and toolkits' translators (azureml_plan.c, toolkit_steps.c,
 * translate.c) and the renderer share: one srun step of the plan, torch.distributed's rendezvous, and the
 * check that opens every step. */
#ifndef BAI_STEPS_H
#define BAI_STEPS_H

#include <stdbool.h>

#include "plan.h"
#include "settings.h"

/* Fail closed on a node where the plugin did not run. The plugin's task context sets BAI_PREPARED_VAR to
 * "<job id>:<node>" in every task it prepared, once it has checked that the prolog prepared the node; a
 * task on a node without the plugin (a configless node whose plugstack.conf includes files it lacks or whose
 * PlugStackConfig path is missing there, a plugin missing or built for another release) inherits srun's value
 * for another node or none. bai_node_check is the POSIX shell text, without single quotes, that every step
 * of the rendered script (and the batch script itself) runs first: it ends the task with status 1 and a
 * message naming the node and the likely causes unless the value is this task's. The causes are said once per
 * script, in the exported BAI_UNPREPARED_VAR, which srun passes on to every step. */
#define BAI_PREPARED_VAR "BATCHAI_NODE_PREPARED"
#define BAI_UNPREPARED_VAR "BATCHAI_UNPREPARED"
/* Beside it, the Slurm release the plugin was built for ("22.05.8"), which batchai-job check-site reports. */
#define BAI_PLUGIN_SLURM_VAR "BATCHAI_PLUGIN_SLURM"
/* Also in every task: the names of the job's variables the plugin set in it (the plan's environment, secrets
 * excepted; not the per-task ones), space-separated, and the job's container option (container_arg), when it
 * has one. batchai-job exec reads both from a first step on the node and hands them to the step it runs in the
 * container: on Slurm 22.05 slurmstepd writes a container's environment before the plugin's task context runs,
 * so only what srun passes reaches it. */
#define BAI_JOB_VARS_VAR "BATCHAI_JOB_VARS"
#define BAI_CONTAINER_VAR "BATCHAI_JOB_CONTAINER"
extern const char bai_node_check[];

/* One srun step of the plan, appended to b: its options
 * (--mpi, --ntasks, extra_opts, --chdir, the container), then the command evaluated by /bin/sh in each task
 * after bai_node_check and `export AZ_BATCHAI_TASK_INDEX=$SLURM_PROCID <prelude>`, on lines of its own. */
struct sbuf;
void bai_plan_step(struct sbuf *b, const struct bai_plan *plan, const struct bai_settings *site, bool mpi,
                   int ntasks, const char *extra_opts, const char *prelude, const char *command);
/* torch.distributed's rendezvous on the job's first node: MASTER_ADDR (its NodeAddr), MASTER_PORT, WORLD_SIZE
 * exported by the batch script, in an export line left open for more variables (the caller ends it). */
void bai_pytorch_rendezvous(struct sbuf *b, int world_size);

#endif
