/* The main step of each toolkit of a job.json (toolkits.h names them and their keys): the Slurm step each
 * becomes, as Batch AI's documentation says each ran. */
#ifndef BAI_TOOLKIT_STEPS_H
#define BAI_TOOLKIT_STEPS_H

#include <stdbool.h>

#include "batchai_jobfile.h"
#include "sbuf.h"

/* Append the main step of the job's toolkit, running `ntasks` tasks, as shell text to b (an allocation
 * failure marks b). False when its toolkit has no main step here, which translation reports (the golden
 * tests translate a job of every toolkit). */
bool bai_toolkit_main_step(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                           const struct bai_settings *site, int ntasks);

#endif
