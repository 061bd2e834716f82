/* The leaves of planning, which the job formats' and toolkits' translators (azureml_plan.c, toolkit_steps.c,
 * translate.c) and the renderer share: one srun step of the plan, torch.distributed's rendezvous, and the
 * check that opens every step. */
#ifndef BAI_STEPS_H
#define BAI_STEPS_H

#include <stdbool.h>

#include "batchai_jobfile.h"

/* The shell text every step runs first, failing closed on a node the plugin did not prepare: batchai_jobfile.h
 * (BAI_PREPARED_VAR) says how. */
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
