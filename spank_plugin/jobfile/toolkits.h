/* The toolkits of a job.json, one row each in bai_toolkits[] (toolkits.c): the JSON property that names it,
 * the keys its object takes, the rules between them, how many tasks its main step runs and the main step
 * itself. The parser (job.c) and the translation (translate.c) know no toolkit by name: adding one is a row
 * there, its functions beside it, and, for a key no toolkit had, a field of struct bai_toolkit_settings with
 * its row in job.c's key table. */
#ifndef BAI_TOOLKITS_H
#define BAI_TOOLKITS_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

struct bai_job;
struct bai_plan;
struct bai_settings;
struct bai_toolkit_settings;
struct sbuf;

struct bai_toolkit {
    const char *property;    /* the JSON property, e.g. "horovodSettings" */
    const char *const *keys; /* the keys its object takes, NULL-terminated; "!key" is required */
    /* Faults between fields, past each key's own check; may fill in a default the file left out (CNTK's
     * languageType). NULL: none. */
    void (*rules)(struct bai_diag *d, const char *path, struct bai_toolkit_settings *t, int node_count);
    /* The main step's task count when the file gives no processCount. NULL: nodeCount. */
    int (*task_count)(const struct bai_job *job);
    /* Append the main step, running `ntasks` tasks, as shell text to b (an allocation failure marks b). */
    void (*main_step)(struct sbuf *b, const struct bai_plan *plan, const struct bai_job *job,
                      const struct bai_settings *site, int ntasks);
};

extern const struct bai_toolkit bai_toolkits[];
extern const size_t bai_toolkit_count;

/* Is the job's commandLine one plain run of the bundled trainer, cifar-train (contrib/cifar/job.json)? Its
 * step is exec'd and warned before the time limit (translate.h: signal_before_limit). */
bool bai_runs_bundled_trainer(const struct bai_job *job);

#endif
