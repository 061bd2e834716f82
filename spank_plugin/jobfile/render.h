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

#endif
