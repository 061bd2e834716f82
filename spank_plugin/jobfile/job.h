/* A Batch AI job file (schema 2018-05-01, as `az batchai job create --config-file` reads it), parsed and
 * validated into a typed description; an Azure ML command job (YAML) is the door's second format
 * (azureml.h), told apart by content and validated into the same description.
 *
 * Contract:
 *  - bai_job_parse() accepts the document either wrapped as {"properties": {...}} (the form of every real
 *    job.json) or bare ({...} with the job's properties at the top). "$schema" is accepted and ignored.
 *  - Every fault is recorded in the diag list with its JSON path (properties.mountVolumes.azureFileShares[0]
 *    .relativeMountPath: ...); on any fault the function returns -1 and the job is left zeroed (nothing to
 *    free). On success it returns 0 and the job owns all its strings (free with bai_job_free()).
 *  - Unknown properties are faults (a misspelled field must not be silently ignored).
 *  - Placeholders real files use are kept verbatim and understood: $AZ_BATCHAI_* variables (expanded by the
 *    shell at run time, and resolved statically through mountVolumes by translate.h where a host path is
 *    needed) and <AZURE_BATCHAI_STORAGE_ACCOUNT> in storage URLs.
 *  - Hostile input is bounded: at most BAI_JOB_MAX_BYTES of text, no NUL bytes; nesting at most
 *    BAI_JOB_MAX_DEPTH, objects and arrays at most BAI_JOB_MAX_ITEMS members or entries each, and at most
 *    BAI_JOB_MAX_VALUES values in all, checked on the text before it is parsed; strings at most
 *    BAI_JOB_MAX_STRING bytes. Each fault names the limit and where it is (JSON path, and line for the ones
 *    found on the text), and the time taken grows about linearly with the text, whatever it holds: names are
 *    compared for duplicates in O(n log n).
 *  - Secret values (secrets[].value, credentials) are held only where needed and never appear in a diag
 *    message.
 *  - Strings that reach the batch script as data, not as shell text, are checked for that use: the image is
 *    an image reference and serverUrl a registry host or URL (no shell syntax in either), script and
 *    interpreter paths pass bai_shell_path_ok(). Command lines and arguments are shell text, run as the
 *    user as Batch AI ran them. */
#ifndef BAI_JOB_H
#define BAI_JOB_H

#include <stdbool.h>
#include <stddef.h>

#include "checks.h" /* the bounds of a job file (BAI_JOB_MAX_*) */
#include "diag.h"

#define BAI_JOB_DEFAULT_WALL_SECONDS (7L * 24 * 3600) /* Batch AI's default: 7.00:00:00 */

/* The settings of the one toolkit the job names: value[i] is what the file gave kind->keys[i] (toolkits.h),
 * a string (NULL: not given) or a count (0: not given); read them with bai_toolkit_str / bai_toolkit_int. */
struct bai_toolkit;
#define BAI_TOOLKIT_MAX_KEYS 12 /* the most keys one toolkit takes */
union bai_toolkit_field {
    char *str;
    int count;
};
struct bai_toolkit_settings {
    const struct bai_toolkit *kind; /* its row of bai_toolkits[] (toolkits.h); NULL for an Azure ML job */
    union bai_toolkit_field value[BAI_TOOLKIT_MAX_KEYS];
};

enum bai_mount_kind {
    BAI_MOUNT_AZURE_FILE_SHARE,  /* azureFileShares[]: share = last path segment of azureFileUrl */
    BAI_MOUNT_AZURE_BLOB,        /* azureBlobFileSystems[]: share = containerName */
    BAI_MOUNT_FILE_SERVER,       /* fileServers[]: share = last segment of fileServer.id (+ sourceDirectory) */
    BAI_MOUNT_UNMANAGED,         /* unmanagedFileSystems[]: mountCommand, allowed only by admin setting */
};

struct bai_mount {
    enum bai_mount_kind kind;
    char *share;           /* the name a site maps to a path (see settings.h); NULL for unmanaged */
    char *source;          /* azureFileUrl, "<account>/<container>", fileServer id, or mountCommand */
    char *source_dir;      /* fileServers sourceDirectory, else NULL */
    char *relative_path;   /* relativeMountPath: checked relative, no "..", no empty segment */
    char *mount_options;   /* mountOptions, else NULL */
    char *file_mode;       /* azureFileShares fileMode (octal string, default "0777") */
    char *dir_mode;        /* azureFileShares directoryMode (default "0777") */
    char *where;           /* the field it came from when not mountVolumes (an Azure ML input), else NULL */
};

struct bai_env {
    char *name;            /* a shell identifier: [A-Za-z_][A-Za-z0-9_]* */
    char *value;           /* NULL for a secret whose value lives in a key vault (valueSecretReference) */
    bool secret;           /* from secrets[]: the value must never be logged or stored in Slurm */
};

struct bai_dir {
    char *id;              /* [A-Za-z0-9_]+, becomes AZ_BATCHAI_INPUT_<ID> / AZ_BATCHAI_OUTPUT_<ID> */
    char *path;            /* input: path; output: pathPrefix */
    char *suffix;          /* output: pathSuffix, else NULL */
};

enum bai_priority { BAI_PRIORITY_NORMAL = 0, BAI_PRIORITY_LOW, BAI_PRIORITY_HIGH };

/* The job.json names, each table indexed by its enum and NULL-terminated: mountVolumes' arrays
 * (bai_mount_kind) and schedulingPriority's values (bai_priority). */
extern const char *const bai_mount_kind_names[];
extern const char *const bai_priority_names[];

struct bai_job {
    int node_count;
    char *cluster_id;              /* cluster.id, else NULL */
    enum bai_priority priority;    /* schedulingPriority, default normal */
    bool priority_given;
    long max_wall_seconds;         /* constraints.maxWallClockTime, default BAI_JOB_DEFAULT_WALL_SECONDS */
    char *std_out_err_prefix;      /* stdOutErrPathPrefix (required) */
    char *prep_command;            /* jobPreparation.commandLine, else NULL */
    char *image;                   /* containerSettings.imageSourceRegistry.image, else NULL */
    char *registry_server;         /* imageSourceRegistry.serverUrl, else NULL */
    char *shm_size;                /* containerSettings.shmSize, else NULL */
    struct bai_mount *mounts; size_t n_mounts;
    struct bai_dir *inputs;   size_t n_inputs;
    struct bai_dir *outputs;  size_t n_outputs;
    struct bai_env *env;      size_t n_env;  /* environmentVariables then secrets, in file order */
    struct bai_toolkit_settings toolkit;
    /* The main step is checkpointable (job.json "x-checkpointable": true, or an Azure ML job's environment
     * variable BATCHAI_CHECKPOINTABLE=true): its command is exec'd (checks.h: bai_check_one_command), the
     * script asks Slurm for SIGUSR1 before the time limit and passes it on to the step, and the job is
     * requeued rather than ended when Slurm takes its nodes; the command resumes by its own flags. */
    bool checkpointable;
#define BAI_CHECKPOINTABLE_KEY "x-checkpointable"
#define BAI_CHECKPOINTABLE_VAR "BATCHAI_CHECKPOINTABLE"
    struct bai_aml *aml;           /* an Azure ML command job: what job.json cannot say (azureml.h); else NULL */
};

/* Parse and validate `len` bytes of text: a job.json (JSON whose first character is '{' and that is not an
 * Azure ML command job, i.e. has "properties" or no "command"), else an Azure ML command job, JSON or YAML
 * (read by libyaml under the same limits: yamltree.h). See the contract above. */
int bai_job_parse(const char *text, size_t len, struct bai_job *job, struct bai_diag *diag);

/* Read the file at `path`: opened O_NONBLOCK, a regular file of at most BAI_JOB_MAX_BYTES, into a new
 * NUL-terminated buffer. I/O faults are recorded with the path and strerror. */
int bai_job_read(const char *path, char **text, size_t *len, struct bai_diag *diag);

/* The number of tasks the main step runs: processCount, else the toolkit's count (toolkits.h:
 * workerCount+parameterServerCount for tensorFlow, 1 for customToolkit and caffe2), else nodeCount. */
int bai_job_task_count(const struct bai_job *job);

void bai_job_free(struct bai_job *job);

#endif
