/* An Azure Machine Learning command job (the CLI v2 YAML, commandJob.schema.json), the second format of the
 * job door: bai_job_parse() tells it from a job.json by content and validates it here into the same
 * struct bai_job, with what job.json cannot say in job->aml. Its translation (azureml_plan.h) builds the
 * same plan as for a job.json.
 *
 * Contract:
 *  - The fields the site can honour fill the job: resources.instance_count -> node_count, compute (without
 *    "azureml:") -> cluster_id (the site's cluster.* map), limits.timeout (seconds) -> max_wall_seconds,
 *    environment.image -> image, resources.shm_size -> shm_size, environment_variables -> env. Datastore
 *    and blob inputs/outputs become mounts of their share (the same share rules as mountVolumes), named
 *    inputs/<name> or outputs/<name>.
 *  - What cannot run on Slurm is a fault naming the field and what to do instead (services, identity,
 *    queue_settings, a git or registered code, an image build, a conda file, MLTable, ...); unknown fields
 *    are faults, as in a job.json; display_name becomes the Slurm job's name and experiment_name its
 *    comment (batchai-job list shows both); other metadata (description, tags, name, $schema) is accepted
 *    and has no Slurm meaning.
 *  - Every ${{inputs.X}} / ${{outputs.X}} of the command names a declared input or output.
 *  - x-batchai-sweep (not Azure ML's: `batchai-job submit` writes it into a sweep's trial, sweep.c) holds each
 *    array index's values of the search space as data (in lists of at most BAI_JOB_MAX_ITEMS trials, the
 *    bound on any list of a job file); the main step sets them (AZUREML_SWEEP_<name>) before the command, so
 *    the command stays the user's own and can be exec'd. */
#ifndef BAI_AZUREML_H
#define BAI_AZUREML_H

#include <cJSON.h>

#include "batchai_jobfile.h"

#define BAI_AML_SWEEP_KEY "x-batchai-sweep"

enum bai_aml_dist { BAI_AML_SINGLE, BAI_AML_MPI, BAI_AML_PYTORCH, BAI_AML_TENSORFLOW };

enum bai_aml_source {
    BAI_AML_LITERAL,   /* a value substituted into the command as written */
    BAI_AML_LOCAL,     /* a path relative to the job file's directory (or absolute) */
    BAI_AML_DATASTORE, /* a path within a share: azureml://datastores/NAME/paths/P, wasbs:// or blob https:// */
    BAI_AML_ASSET,     /* azureml:NAME@label or azureml:NAME:version: the site's data.<ref> map */
    BAI_AML_DEFAULT,   /* an output without a path: the job's own directory beside its logs */
};

enum bai_aml_mode { BAI_AML_MOUNT, BAI_AML_DOWNLOAD, BAI_AML_UPLOAD };

struct bai_aml_io {
    char *name;          /* [A-Za-z_][A-Za-z0-9_]* */
    bool output;
    bool file;           /* type uri_file: the path names a file */
    enum bai_aml_source source;
    enum bai_aml_mode mode;
    char *value;         /* literal text, local path, path within the share ("" for its root), asset ref */
    size_t mount;        /* BAI_AML_DATASTORE: its index in job->mounts */
};

struct bai_aml {
    char *command;       /* as written, ${{...}} substituted at translation */
    char *code;          /* the code directory as written, else NULL */
    char *environment;   /* an azureml: environment reference (the site's environment.<ref> map), else NULL */
    char *instance_type; /* resources.instance_type (the site's instance_type.<name> map), else NULL */
    enum bai_aml_dist dist;
    int per_node;        /* processes per node (mpi, pytorch; 1 otherwise) */
    int workers, ps;     /* tensorflow */
    struct bai_aml_io *io; size_t n_io;
    char *experiment;    /* experiment_name, recorded in the Slurm job's comment (batchai-job list), else NULL */
    char *display_name;  /* display_name, the Slurm job's name (what Azure ML shows as the run's name), else NULL */
    /* x-batchai-sweep: the parameters' names and, per trial (array index), their values; 0 trials when none */
    char *sweep_names[BAI_SWEEP_MAX_PARAMS]; size_t n_sweep_params;
    char **sweep_values; size_t n_sweep_trials; /* n_sweep_trials x n_sweep_params */
};

/* Validate the document (a mapping already read and bounded by job.c) into job. Faults go to d; the caller
 * frees the job on any. */
void bai_aml_parse(const cJSON *root, struct bai_job *job, struct bai_diag *d);

/* The tasks of the main step: instance_count x process_count_per_instance, or workers + parameter servers. */
int bai_aml_task_count(const struct bai_job *job);

void bai_aml_free(struct bai_aml *aml);

#endif
