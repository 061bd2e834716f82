/* An Azure ML sweep job (sweepJob.schema.json) as one Slurm job array: its trial is a command job whose
 * command first takes its index's values of the search space. It knows nothing of Slurm beyond the variable
 * SLURM_ARRAY_TASK_ID the trial's command reads.
 *
 * Contract:
 *  - The search space's expressions follow Azure ML's definitions: choice(values), randint(upper) in
 *    [0, upper), uniform(min_value, max_value), loguniform = exp(uniform(min_value, max_value)),
 *    normal(mu, sigma), lognormal = exp(normal(mu, sigma)), and the q- forms round(x / q) * q.
 *  - sampling_algorithm grid (choices only: their product, in order) or random (seeded: the same seed gives the
 *    same trials; without one the caller's is used and recorded); bayesian, early_termination and anything
 *    else Slurm cannot do are refused by name.
 *  - trial_timeout is each trial's limits.timeout; timeout the whole sweep's (the caller's deadline).
 *  - ${{search_space.X}} in the trial's command becomes ${AZUREML_SWEEP_X}, set for the index; every trial
 *    has MLFLOW_TRACKING_URI, a file store under its own outputs (outputs/mlruns). */
#ifndef BAI_SWEEP_H
#define BAI_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "diag.h"

#define BAI_SWEEP_MAX_TRIALS 1000
#define BAI_SWEEP_MAX_PARAMS 32

struct bai_sweep {
    cJSON *trial;          /* the trial's command job, its command taking the index's values */
    size_t n_trials;       /* limits.max_total_trials (grid: at most the grid's size) */
    int max_concurrent;    /* limits.max_concurrent_trials, else n_trials */
    long timeout;          /* limits.timeout (seconds), 0 when none */
    long trial_timeout;    /* limits.trial_timeout (seconds), 0 when none */
    bool random;           /* sampling: random (else grid) */
    uint64_t seed;
    bool maximize;         /* objective.goal */
    char *metric;          /* objective.primary_metric */
    char *names[BAI_SWEEP_MAX_PARAMS];
    size_t n_params;
    char **values;         /* n_trials x n_params: each trial's values as the command gets them */
};

/* Whether the text is an Azure ML sweep job (YAML with `type: sweep`). */
bool bai_sweep_detect(const char *text, size_t len);

/* Parse the sweep read from `file` (an absolute path); `seed` is used when the file gives none. Returns 0, or
 * -1 with every fault in d. */
int bai_sweep_parse(const char *text, size_t len, const char *file, uint64_t seed, struct bai_sweep *s,
                    struct bai_diag *d);

/* A pipeline's sweep step: its sampling_algorithm, search_space, objective and limits read from `step`, and
 * `trial` (the trial component's command job, already bound) made the array's: its command takes the index's
 * values first, its limits.timeout is trial_timeout. Faults are relative to the step. Returns 0, or -1. */
int bai_sweep_step(const cJSON *step, uint64_t seed, cJSON *trial, struct bai_sweep *s, struct bai_diag *d);

void bai_sweep_free(struct bai_sweep *s);

#endif
