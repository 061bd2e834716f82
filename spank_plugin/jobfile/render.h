/* The batch script rendered from a plan (render.c), and what the plugin reads back from one. */
#ifndef BAI_RENDER_H
#define BAI_RENDER_H

#include "plan.h"

/* Render the batch script: #SBATCH lines, comments that explain non-obvious mappings, the preparation
 * step (once per node, as the user, output in the Batch AI log layout, failure naming node and exit
 * code), and the main step. Secret values never appear in it. Newly allocated, NULL on OOM. */
char *bai_render_script(const struct bai_plan *plan);

/* The shell text that runs the node steps of a job whose user gave their own script: the same mount and
 * preparation steps as the rendered script, run from the batch step by the plugin. NULL when the job has
 * none (bai_plan_has_node_steps) or on OOM. */
char *bai_render_node_script(const struct bai_plan *plan);

/* The srun option that puts a step in the job's container, read back from the header of a script
 * bai_render_script() made (Slurm keeps it: `scontrol write batch_script`): "--container=BUNDLE" or
 * "--container-image=IMAGE", unquoted, one argv word, into *option (malloc'ed). batchai-job exec runs its
 * command in the container this way. Returns 1, 0 when the script names no container (*option NULL), -1 on
 * a malformed line or OOM. */
int bai_script_container(const char *script, char **option);

#endif
