/* batchai-job for Azure ML pipeline jobs: validate, translate and submit a pipeline as dependent Slurm jobs
 * (one per command step, through sbatch and the plugin, as `submit` does for one job), and status, wait and
 * terminate of all of them by the pipeline's id: the job id of its first step.
 *
 * Each step's command job is written to BASE/<step>.json, BASE the pipeline file's directory and its name
 * (pipeline.yml -> pipeline/), so its logs and outputs are BASE/<step>/<job id>/ as a command job's are
 * beside its file; BASE/pipeline-<id>.json records the graph (steps, job ids, dependencies, outputs), which
 * status, wait and terminate read, found from the first step's log directory. */
#ifndef BAI_PIPELINE_CMD_H
#define BAI_PIPELINE_CMD_H

#include <stdbool.h>

#include "jobfile/batchai_jobfile.h"

struct bai_pipeline_opts {
    const struct bai_settings *site;
    enum bai_job_level level;
    const char *name;   /* --name: BASE's name instead of the file's */
    const char *shares; /* --share maps, or NULL */
};

/* Whether the file at path is a pipeline job (it is read; an unreadable file is not). */
bool bai_pipeline_file(const char *path);

/* validate (one line "PATH: valid (...)", or the faults), translate (every step's script), submit (argv:
 * sbatch options; --parsable prints only the pipeline's id). Exit status as batchai-job's. */
int bai_pipeline_validate(const struct bai_pipeline_opts *o, const char *path);
int bai_pipeline_translate(const struct bai_pipeline_opts *o, const char *path);
int bai_pipeline_submit(const struct bai_pipeline_opts *o, const char *path, int argc, char **argv);

/* status/wait/terminate/list of a pipeline id; nodes/files/stream/exec refused (2) when its first step is a
 * sweep (the id is then a job array's); -1 when the id heads no pipeline, or otherwise (the caller treats it
 * as the first step's job). */
int bai_pipeline_control(const char *cmd, int argc, char **argv);

/* sweep-best RECORD: the job a pipeline's sweep step runs after its trials (as the user): the trial with the best
 * objective metric, and the step's outputs (BASE/<step>/<this job>/outputs/<name>) linked to that trial's. 1,
 * with the reason, when no trial logged the metric: the steps after it then never run. */
int bai_pipeline_sweep_best(int argc, char **argv);

struct bai_jobinfo;
/* The job's stdout.txt with %j expanded into path; 0 when it is a Batch AI log (".../<id>/stdouterr/stdout.txt"),
 * else -1. */
int bai_stdout_path(const struct bai_jobinfo *ji, char *path, size_t size);

#endif
