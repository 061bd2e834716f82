/* batchai-job for Azure ML sweep jobs: validate, translate and submit a sweep as one job array (through
 * sbatch and the plugin), and status, wait and terminate of its trials by the array's job id.
 *
 * The trial's command job is BASE/trial.json (BASE: the sweep file's directory and name), each trial's logs
 * and outputs BASE/trial/<its job id>/, its MLflow file store outputs/mlruns there; BASE/sweep-<id>.json
 * records the seed and each index's parameters, which status reads back with each trial's state and
 * objective metric (the last value of mlruns/<experiment>/<run>/metrics/<name>, lines "timestamp value
 * step", MLflow's file-store layout). */
#ifndef BAI_SWEEP_CMD_H
#define BAI_SWEEP_CMD_H

#include <stdbool.h>

#include <cJSON.h>

#include "pipeline_cmd.h"

bool bai_sweep_file(const char *path);
int bai_sweep_validate(const struct bai_pipeline_opts *o, const char *path);
int bai_sweep_translate(const struct bai_pipeline_opts *o, const char *path);
int bai_sweep_submit(const struct bai_pipeline_opts *o, const char *path, int argc, char **argv);
/* status/wait/terminate/list of a sweep id; nodes/files/stream/exec refused naming a trial's id (2); -1 when
 * the id is no sweep's. */
int bai_sweep_control(const char *cmd, int argc, char **argv);
/* Terminate the trials of sweep `array` (bai_sweep_status's "trials"): the queued ones cancelled first, so that
 * none starts in a slot a stopping trial frees, and recorded as such in the sweep's `record` (status reads it:
 * Slurm 23.02 and later forget them); each running one as terminate stops one job (SIGTERM to its steps, then
 * the grace of argv[1..2], "--grace N"); then the array. 0 when every part was taken. */
int bai_sweep_stop(const char *array, const char *record, const cJSON *trials, int argc, char **argv);

/* Shared with pipeline_cmd.c (a pipeline's sweep steps): the record of sweep `sw` as array `id` (what
 * status reads back), and the status object of a record whose trials' directories are trials_dir/<job id>
 * (*ended: every trial ended; *first_fail: the first failed trial's exit status, else 0). */
struct bai_sweep;
cJSON *bai_sweep_record(const struct bai_sweep *sw, const char *id, const char *file);
cJSON *bai_sweep_status(const cJSON *record, const char *trials_dir, bool *ended, int *first_fail);

#endif
