/* The job-file library's public header: all that code outside spank_plugin/jobfile/ (the batchai-job command,
 * the SPANK plugin, batchai-plan, node/) may use of it. A job file is read, checked and parsed (job, the
 * Batch AI format; an Azure ML job, a pipeline or a sweep told apart by content), translated with the site's
 * settings into a plan, held to the site's policy and the host, and rendered into a batch script; load does
 * all of it as far as a level asks, the one way every caller opens a job file. Pure C: nothing here knows
 * Slurm. The library's other headers are its own (tests/jobfile tests them through their own -I); each of
 * them includes this one, and each fact below lives here alone. Sections name the file that implements
 * them. */
#ifndef BATCHAI_JOBFILE_H
#define BATCHAI_JOBFILE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cJSON; /* cJSON.h: the documents of pipelines and sweeps */

/* ---- checks.c: the bounds of a job file. */
#define BAI_JOB_MAX_BYTES  (1024 * 1024)
#define BAI_JOB_MAX_DEPTH  32
#define BAI_JOB_MAX_STRING (64 * 1024)
#define BAI_JOB_MAX_ITEMS  256
/* Values in the whole document (each member, each array entry, and the top): far above the some 12,300 of the
 * largest valid job (256 of each list, every optional field given), far below the 500,000 that 1 MiB holds. */
#define BAI_JOB_MAX_VALUES 65536
#define BAI_JOB_MAX_NODES  100000
#define BAI_JOB_MAX_DAYS   3650

/* ---- diag.c */
/* Diagnostics: a list of faults, each naming where it is and what was expected.
 *
 * Validation never stops at the first fault; it records every one so that a user fixes the job file in one
 * pass. Messages are formatted "<json path>: <what is wrong>", e.g.
 *   properties.nodeCount: expected an integer >= 1, got "four"
 * The list is bounded (BAI_DIAG_MAX): past that a single "... and N more" line stands for the rest, so a
 * hostile file cannot make the report itself unbounded. */

#define BAI_DIAG_MAX 64

struct bai_diag {
    char *msg[BAI_DIAG_MAX];
    size_t count;   /* messages stored */
    size_t dropped; /* faults past BAI_DIAG_MAX, counted but not stored */
};

/* Record one fault at `path` (may be NULL or "" for file-level faults). Never fails: on allocation
 * failure the fault is counted as dropped. */
void bai_diag_add(struct bai_diag *d, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void bai_diag_vadd(struct bai_diag *d, const char *path, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Total faults recorded, stored or dropped. */
size_t bai_diag_total(const struct bai_diag *d);

/* Print every message to `f`, one per line, each prefixed with `prefix` (e.g. "job.json: "). */
void bai_diag_print(const struct bai_diag *d, FILE *f, const char *prefix);

/* Call fn(arg, message) for every message, then for the "... and N more" line if any. Used by the SPANK
 * plugin to route messages through slurm_error(). */
void bai_diag_each(const struct bai_diag *d, void (*fn)(void *arg, const char *msg), void *arg);

void bai_diag_free(struct bai_diag *d);

/* ---- job.c */
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
 *    shell at run time, and resolved statically through mountVolumes by translate.c where a host path is
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
    char *share;           /* the name a site maps to a path (see settings.c); NULL for unmanaged */
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

/* ---- settings.c */
/* Site settings: how an admin maps Batch AI concepts onto the site.
 *
 * The same "key=value" words are taken as plugstack.conf arguments by the plugin and as lines of a settings
 * file (`settings_file=PATH` in plugstack, `--settings FILE` for batchai-job; '#' starts a comment). An
 * unknown key, a malformed value or a duplicate map entry is an error naming the word: a typo never passes
 * silently. A later word for a plain key replaces the earlier one.
 *
 * Every key, its type, default and help live in one table, bai_setting_table (settings.c), in the manner of
 * Slurm's s_p_options_t: the parser, the defaults of bai_settings_init and the settings section of
 * spank_batchai(8) (`make settings-doc`, checked by tests/jobfile/test_settings_doc.sh) all come from it. Adding a setting is one row there plus its field.
 */

enum bai_runtime { BAI_RUNTIME_OCI = 0, BAI_RUNTIME_PYXIS, BAI_RUNTIME_NONE };

/* What a job whose cluster or compute the site does not map gets: refused, or the default partition. */
enum bai_unmapped { BAI_UNMAPPED_REFUSE = 0, BAI_UNMAPPED_PARTITION };

/* GPUs per node as the site declares them: "N" or "TYPE:N" (Slurm's gpu:TYPE:N without "gpu:"). */
struct bai_gpus {
    int count;
    char type[64];       /* "" when untyped */
};

struct bai_kv {
    char *key;
    char *value;
};

enum bai_prio_kind { BAI_PRIO_NONE = 0, BAI_PRIO_QOS, BAI_PRIO_NICE };

struct bai_prio_map {
    enum bai_prio_kind kind;
    char *qos; /* BAI_PRIO_QOS */
    int nice;  /* BAI_PRIO_NICE */
};

struct bai_settings {
    char *shares_root;
    char *mount_root;
    char *job_root;
    char *job_temp;
    char *image_root;
    char *partition;          /* NULL: Slurm's default partition */
    char *python;
    char *mpi;
    enum bai_runtime runtime;
    bool allow_mount_command;
    bool user_shares;
    int gpus_per_node;
    int unmapped_cluster;    /* enum bai_unmapped */
    struct bai_prio_map priority[3]; /* indexed by enum bai_priority */
    struct bai_kv *shares;   size_t n_shares;
    struct bai_kv *images;   size_t n_images;
    struct bai_kv *clusters; size_t n_clusters;
    struct bai_kv *gpus;     size_t n_gpus;            /* cluster ID -> "N" or "TYPE:N" */
    struct bai_kv *instance_types; size_t n_instance_types; /* Azure ML instance type -> "N" or "TYPE:N" */
    struct bai_kv *environments; size_t n_environments; /* Azure ML environment reference -> image */
    struct bai_kv *data;     size_t n_data;            /* Azure ML data asset reference -> directory */
    struct bai_kv *components; size_t n_components;    /* Azure ML registered component -> its file */
};

/* Fill in the documented defaults. Returns 0, or -1 on allocation failure. */
int bai_settings_init(struct bai_settings *s);

/* Apply one "key=value" word. `where` names its origin for messages (e.g. "plugstack.conf" or
 * "site.conf:12"). Returns 0, or -1 with a diag entry. A settings_file= word is only accepted when
 * allow_file is true; it then loads that file. */
int bai_settings_apply(struct bai_settings *s, const char *word, const char *where, bool allow_file,
                       struct bai_diag *diag);

/* bai_settings_apply on top of settings made elsewhere (batchai-job's --set over the site's line): a map
 * entry already set takes the new value instead of being a duplicate; settings_file is not allowed. */
int bai_settings_override(struct bai_settings *s, const char *word, const char *where, struct bai_diag *diag);

/* Apply every line of a settings file. Returns 0, or -1 with a diag entry per bad line. */
int bai_settings_load_file(struct bai_settings *s, const char *path, struct bai_diag *diag);

/* The site path of share `name`: share.NAME, else shares_root/NAME. Newly allocated, or NULL on OOM. */
char *bai_settings_share_path(const struct bai_settings *s, const char *name);

/* The container target of `image` for the configured runtime: the bundle directory (oci) or the image
 * reference itself (pyxis). NULL for runtime none. Newly allocated. */
char *bai_settings_image_target(const struct bai_settings *s, const char *image);

/* The partition mapped to a cluster name (the last segment of cluster.id), or NULL. */
const char *bai_settings_cluster_partition(const struct bai_settings *s, const char *cluster_name);

/* The GPUs per node of cluster `cluster_name` (gpus.ID), or NULL when the site declares none for it. */
const char *bai_settings_cluster_gpus(const struct bai_settings *s, const char *cluster_name);

/* The GPUs per node of an Azure ML instance type (instance_type.NAME), or NULL. */
const char *bai_settings_instance_gpus(const struct bai_settings *s, const char *instance_type);

/* Read "N" or "TYPE:N" (N from 0 to 1024, TYPE letters, digits, '_' '-' '.'). Returns 0, or -1. */
int bai_gpus_parse(const char *v, struct bai_gpus *out);

/* The image an Azure ML environment reference maps to (environment.REF), or NULL; BAI_ENV_HOST: no container. */
#define BAI_ENV_HOST "host"
const char *bai_settings_environment_image(const struct bai_settings *s, const char *ref);

/* The file of an Azure ML registered component (component.REF), or NULL. */
const char *bai_settings_component_file(const struct bai_settings *s, const char *ref);

/* The directory an Azure ML data asset reference maps to (data.REF), or NULL. */
const char *bai_settings_data_dir(const struct bai_settings *s, const char *ref);

void bai_settings_free(struct bai_settings *s);

/* What a value must be; the parser checks it and the docs name it. */
enum bai_setting_type {
    BAI_SET_PATH,     /* char *: an absolute directory without a ".." segment */
    BAI_SET_STRING,   /* char *: any word */
    BAI_SET_BOOL,     /* bool: yes or no */
    BAI_SET_INT,      /* int: a decimal from min to max */
    BAI_SET_CHOICE,   /* enum: one of the '|'-separated words of arg, stored as its index */
    BAI_SET_PRIORITY, /* struct bai_prio_map: qos:NAME, nice:N or none */
    BAI_SET_INCLUDE,  /* settings_file: load the named file (plugstack only, not nested) */
    BAI_SET_GPUS,     /* char *: "N" or "TYPE:N", checked by bai_gpus_parse() */
};

/* One row of the settings table. A map row's key is a prefix and a placeholder ("share.NAME"): any
 * "share.<name>" word adds <name> to the struct bai_kv list at offset (count at count), once per name. */
struct bai_setting {
    const char *key;            /* as the docs write it */
    const char *arg;            /* the value as the docs write it: DIR, NAME, oci|pyxis|none */
    enum bai_setting_type type;
    bool map;
    size_t offset, count;       /* the field in struct bai_settings; count: a map's size_t */
    long min, max;              /* BAI_SET_INT */
    const char *def;            /* applied by bai_settings_init through the parser; NULL: none */
    const char *help;           /* sentences separated by '\n'; `code` spans; the default is added */
};

extern const struct bai_setting bai_setting_table[];
extern const size_t bai_setting_count;

/* ---- plan.c */
/* The plan: a validated job translated into a Slurm job (translate.c builds it, render.c renders it), and the
 * small functions over it that every layer above shares.
 *
 * The plan is the single source of truth shared by `batchai-job translate` and the SPANK plugin, and a
 * plain value: it owns every string it holds and points into no job, so whoever holds it needs nothing else:
 *  - the allocation (what becomes #SBATCH lines),
 *  - the host paths that Batch AI paths resolve to (log directory, mounts),
 *  - the environment every task sees,
 *  - the preparation step and the main step as shell text.
 *
 * Paths that depend on the Slurm job id carry the token "%j" (as sbatch's --output does); the batch script
 * renders them as ${SLURM_JOB_ID}, the plugin substitutes the id with bai_expand_jobid(). */

/* One mount: the site directory and where the job sees it. */
struct bai_plan_mount {
    enum bai_mount_kind kind;
    char *where;         /* its JSON path, e.g. "properties.mountVolumes.azureFileShares[0]", for messages */
    char *share;         /* the share's name; NULL for an unmanaged file system */
    char *relative_path; /* relativeMountPath */
    char *target;        /* "%j"-pattern path: <job_root>/%j/mounts/<relativeMountPath> */
    char *site_path;     /* the site directory it exposes; NULL for an unmanaged file system */
    bool user_dir;       /* site_path is the user's own (a user share map): reached only as the user */
    bool user_maps;      /* the site lets users map shares (user_shares), for the messages */
    char *mount_command; /* unmanaged file systems (only when the admin allows), else NULL */
};

/* One environment variable of every task. value is a "%j"-pattern, NULL for a key-vault secret (which
 * bai_plan_check_host() refuses). */
struct bai_plan_env {
    char *name;
    char *value;
    int secret;          /* never print or log the value */
    char *where;         /* a secret's JSON path, e.g. "properties.secrets[0]", for messages; else NULL */
};

struct bai_plan {
    /* allocation */
    char *job_name;
    int nodes;
    int ntasks;
    int ntasks_per_node; /* 0: none (an Azure ML job's process_count_per_instance) */
    long time_limit_seconds;
    char *partition;     /* NULL: none */
    char *qos;           /* NULL: none */
    char *display_name;  /* Slurm's job name when it is not job_name: an Azure ML display_name, unless the user
                          * named the job (--batchai-name, -n); else NULL */
    char *comment;       /* Slurm's job comment, BAI_EXPERIMENT_TAG NAME (Azure ML experiment_name), else NULL */
    int gpus_per_node;   /* the GPUs each node gives the job (--gpus-per-node / --gres=gpu:TYPE:N); 0: none */
    char *gpu_type;      /* the site's GRES type of those GPUs, or NULL (untyped: --gpus-per-node) */
    bool gpu_per_rank;   /* the main step's tasks are ranks, each bound to a GPU of its own (--gpus-per-task=1) */
    int ranks_min, ranks_max; /* with gpu_per_rank: the fewest and most ranks a node runs */
    int nice;            /* 0: none */
    char *log_dir;       /* "%j"-pattern host path: <resolved stdOutErrPathPrefix>/<job_name>/%j/stdouterr */
    char *job_dir;       /* "%j"-pattern: <job_root>/%j */
    char *job_temp;      /* "%j"/"%N"-pattern: <job_temp>/%j.%N, AZ_BATCHAI_JOB_TEMP (node-local scratch, one
                          * per node) */
    /* nodes */
    char *container;     /* srun container option as shell text, its value quoted:
                          * "--container='/var/lib/batchai/images/x'", or NULL */
    char *container_arg; /* the same option as one argv word, unquoted: "--container=/var/lib/..." */
    char *bundle;        /* oci: the bundle directory the option names (checked by bai_plan_check_host()) */
    struct bai_plan_mount *mounts; size_t n_mounts;
    bool mount_commands_allowed; /* the site's allow_mount_command, checked by bai_plan_check_host() */
    struct bai_plan_env *env;      size_t n_env;   /* AZ_BATCHAI_* first, then the job's variables */
    char *secrets_file;  /* "%j"-pattern: <job_dir>/secrets.env, which the prolog writes (0600, the user's)
                          * and the preparation and main steps source; NULL when the job has no secrets */
    char *prep_command;  /* jobPreparation.commandLine, or NULL */
    char *main_step;     /* shell text of the main step (an srun line) */
    char *workdir;       /* the steps' --chdir (an Azure ML job's code directory), or NULL */
    int signal_before_limit; /* > 0: the main step is checkpointable (job.c), and checkpoints on SIGUSR1: the
                              * script asks for it that many seconds before the time limit
                              * (--signal=B:USR1@N), passes it on to the step and asks to be requeued
                              * (--requeue) rather than ended when Slurm takes its nodes; 0: none */
    /* What the script's comments say the lines came from. */
    struct {
        int node_count;
        bool process_count_given;
        bool default_wall_time;  /* maxWallClockTime absent: Batch AI's 7 days */
        char *out_err_prefix;    /* stdOutErrPathPrefix as the file says it */
        char *cluster_id;        /* the cluster's id (cluster.id, compute or --cluster), or NULL */
        bool cluster_given;      /* cluster_id came from the command line (--cluster) */
        bool cluster_mapped;     /* the site maps it to a partition (cluster.ID) */
        char *gpu_setting;       /* the site setting the GPU count came from ("gpus.nc6"), or NULL */
        char *image, *shm_size;  /* containerSettings, or NULL */
        const char *toolkit;     /* the toolkit's property name, e.g. "horovodSettings" (static) */
        bool aml;                /* an Azure ML command job: the comments name its fields */
    } origin;
};

/* A checkpointable step needs time for one step and one checkpoint after the warning (the bundled trainer's:
 * seconds at most on a CPU); Slurm may send it up to 60 s earlier than asked, never later. */
#define BAI_CHECKPOINT_WARNING_SECONDS 60

/* The experiment is kept in the Slurm job's comment as "batchai-experiment=NAME": from an Azure ML file's
 * experiment_name (the rendered script's #SBATCH --comment) or `batchai-job submit --experiment NAME`. */
#define BAI_EXPERIMENT_TAG "batchai-experiment="

/* A job submitted with --batchai-job and a script of the user's own keeps Slurm's output where the user asked,
 * not in Batch AI's log layout, so nothing Slurm shows marks it as a Batch AI job: its batch step writes this
 * line to that output when the node is ready (job id, job file, log directory), and batchai-job status finds
 * the job's log directory by it. */
#define BAI_OWN_SCRIPT_LINE "batchai: job %s runs %s with your own script; its Batch AI logs are in %s\n"
#define BAI_OWN_SCRIPT_LOGS "; its Batch AI logs are in "

/* Replace every "%j" in pattern with jobid. Newly allocated, NULL on OOM. */
char *bai_expand_jobid(const char *pattern, const char *jobid);

/* Replace every "%N" in pattern with node, the node's name: the job temp is one per node, also where
 * several slurmd share a host. The plugin passes SLURMD_NODENAME's value, the script "${SLURMD_NODENAME}"
 * inside a step (never in the batch step's own code, which runs on the first node only). */
char *bai_expand_node(const char *pattern, const char *node);

/* Format seconds as Slurm's --time: "D-HH:MM:SS" (or "HH:MM:SS" under a day) into buf. */
void bai_format_time(long seconds, char *buf, size_t size);

/* Does the job have node steps (a preparation command or an unmanaged mountCommand)? */
bool bai_plan_has_node_steps(const struct bai_plan *plan);

void bai_plan_free(struct bai_plan *plan);

/* ---- translate.c */
/* Translation of a validated job into a Slurm job: the plan (plan.c); render.c renders its batch script.
 * Translation is pure: it reads no file and touches nothing on the host, so it is deterministic and safe to
 * run anywhere. Checks that need the host (does a share's directory exist? is a bundle staged?) are made by
 * the plugin at submit time with bai_plan_check_host(). */

/* A user's own share maps, "NAME=DIR[,NAME=DIR...]" (sbatch --batchai-share, batchai-job --share): for this
 * job, share NAME is the user's directory DIR, where the site allows it (user_shares). */
#define BAI_USER_SHARES_MAX 16

struct bai_translate_opts {
    const char *job_name;  /* default: the job file's base name without .json / .job.json */
    const char *job_file;  /* the job file's path as the user gave it (for --batchai-job= and comments) */
    const char *user_shares; /* NULL or the user's share maps (above) */
    const char *cluster;   /* NULL or the cluster named on the command line (sbatch --batchai-cluster,
                            * batchai-job --cluster): used as cluster.id is; one the file names must match */
};

/* bai_translate, except that the plan, as far as it got, is kept when there are faults: for the host's checks,
 * so that a file's faults are all reported at once (a container refused and a missing share). The caller
 * frees it with bai_plan_free either way. */
int bai_translate_all(const struct bai_job *job, const struct bai_settings *site,
                      const struct bai_translate_opts *opts, struct bai_plan *plan, struct bai_diag *d);

/* Build the plan. Returns 0, or -1 with every fault in diag (e.g. an unmapped path or a container job on a
 * site with container_runtime=none). */
int bai_translate(const struct bai_job *job, const struct bai_settings *site,
                  const struct bai_translate_opts *opts, struct bai_plan *plan, struct bai_diag *diag);

/* Check the plan against the site's policy, touching nothing on the host: no unmanaged mountCommand unless
 * allow_mount_command=yes, no key-vault secret. The allocator and every node (prolog and tasks) check it, so
 * a job that bypassed sbatch, or a file changed after submission, is held to the same policy. Returns 0, or
 * -1 with faults in diag. */
int bai_plan_check_policy(const struct bai_plan *plan, struct bai_diag *diag);

/* bai_plan_check_policy, then the host, at submit time: share directories exist, container bundles are
 * staged. Returns 0, or -1 with faults in diag. */
int bai_plan_check_host(const struct bai_plan *plan, struct bai_diag *diag);

/* ---- load.c */
/* Opening a job file: the one pipeline that batchai-job, the allocator, the prolog and the tasks share.
 *
 * bai_job_open reads the file through a reader, checks its digest, parses and validates it, translates it
 * with the site settings and holds the plan to the site, as far as the level asks. Every caller goes through
 * it, so `batchai-job validate` and `translate` give the answer sbatch gives with the same settings, and a
 * node holds a file to the same rules as the submit host. Only the reader differs: the command reads the
 * file itself (bai_job_read_direct); the plugin reads it in a child process, as the user in the prolog, that
 * is killed at a deadline (node/as_user.h). */

/* How far bai_job_open goes; each level includes the ones before. */
enum bai_job_level {
    BAI_JOB_PARSE,  /* read, digest, parse and validate the document: what the file says */
    BAI_JOB_POLICY, /* translate with the site settings into a plan, and hold it to the site's policy
                     * (bai_plan_check_policy): what every node checks, touching nothing on the host */
    BAI_JOB_HOST,   /* and check the host (bai_plan_check_host: share directories, staged bundles): what
                     * sbatch checks at submission, and batchai-job by default */
};

/* Reads the file at `path` into a new NUL-terminated buffer of at most BAI_JOB_MAX_BYTES; on failure records
 * the reason in diag (at the file level) and returns -1. */
struct bai_job_reader {
    int (*read)(void *arg, const char *path, char **text, size_t *len, struct bai_diag *diag);
    void *arg;
};

/* The reader of a process that may read the file itself: bai_job_read. */
extern const struct bai_job_reader bai_job_read_direct;

struct bai_job_source {
    const char *path;     /* what the reader opens */
    const char *job_file; /* the absolute path the plan names (--batchai-job=, an Azure ML job's code and
                           * data are found from it); NULL: path */
    const char *job_name; /* NULL: the file's base name without .json / .job.json */
    const char *digest;   /* the SHA-256 (hex) the content must have (the allocator's), or NULL */
    const char *user_shares; /* the user's share maps (translate.c), or NULL */
    const char *cluster;  /* the cluster named on the command line (translate.c), or NULL */
};

/* An opened job file. plan is set from BAI_JOB_POLICY on. */
struct bai_opened {
    struct bai_job job;
    struct bai_plan plan;
    char digest[65];      /* SHA-256 (hex) of the content read */
    bool have_job, have_plan;
};

/* Open src at `level` with the site settings `site` (unused at BAI_JOB_PARSE, may then be NULL). Returns 0
 * with `out` filled (free with bai_opened_free), or -1 with every fault in diag and `out` empty. The text
 * read is wiped before it is freed: it may hold secrets' values. Faults name JSON paths, not the file: the
 * caller prefixes them with the name it knows the file by. */
int bai_job_open(const struct bai_job_source *src, const struct bai_settings *site, enum bai_job_level level,
                 const struct bai_job_reader *reader, struct bai_opened *out, struct bai_diag *diag);

void bai_opened_free(struct bai_opened *o);

/* ---- render.c */
/* The batch script rendered from a plan (render.c), and what the plugin reads back from one. */

/* Render the batch script: #SBATCH lines, comments that explain non-obvious mappings, the preparation
 * step (once per node, as the user, output in the Batch AI log layout, failure naming node and exit
 * code), and the main step. Secret values never appear in it. Newly allocated, NULL on OOM. */
char *bai_render_script(const struct bai_plan *plan);

/* The shell text that runs the node steps of a job whose user gave their own script: the same mount and
 * preparation steps as the rendered script, run from the batch step by the plugin. NULL when the job has
 * none (bai_plan_has_node_steps) or on OOM. */
char *bai_render_node_script(const struct bai_plan *plan);

/* ---- sweep.c */
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
 *  - ${{search_space.X}} in the trial's command becomes ${AZUREML_SWEEP_X}, which the trial's main step sets
 *    for its index from the values kept as data in the trial (x-batchai-sweep, azureml.h), so the command
 *    stays the user's one command (exec'd; checkpointable where asked); every trial has MLFLOW_TRACKING_URI, a
 *    file store under its own outputs (outputs/mlruns). */

#define BAI_SWEEP_MAX_TRIALS 1000
#define BAI_SWEEP_MAX_PARAMS 32

struct bai_sweep {
    struct cJSON *trial;   /* the trial's command job, with x-batchai-sweep: each index's values */
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
 * `trial` (the trial component's command job, already bound) made the array's: it holds each index's
 * values (x-batchai-sweep), its limits.timeout is trial_timeout. Faults are relative to the step. Returns 0,
 * or -1. */
int bai_sweep_step(const struct cJSON *step, uint64_t seed, struct cJSON *trial, struct bai_sweep *s,
                   struct bai_diag *d);

void bai_sweep_free(struct bai_sweep *s);

/* ---- pipeline.c */
/* An Azure ML pipeline job (pipelineJob.schema.json) as a graph of command jobs. It knows nothing of Slurm:
 * batchai-job submits each step as the command job this file writes for it, after the steps it depends on.
 *
 * Contract:
 *  - bai_pipeline_parse reads the pipeline, its components (inline, a file relative to the file that names
 *    it, `azureml:NAME@latest` or `azureml:NAME:VERSION` through the site's component.REF map) and nested
 *    `type: pipeline` components, and gives every `type: command` step one command-job document: the
 *    component's command, code (made absolute), environment, distribution, resources and variables, the
 *    step's overrides, the compute (the step's, else settings.default_compute), and every input and output
 *    bound. Bindings: `${{parent.inputs.X}}`, `${{parent.outputs.X}}`, `${{parent.jobs.S.outputs.Y}}` and
 *    literals; local paths are made absolute from the file that names them.
 *  - Refused, with the YAML path, before anything runs: step kinds Slurm cannot run (automl, spark,
 *    parallel, data_transfer, import), an unknown step, input or output in a binding, a cycle, a
 *    type mismatch (a literal into data, data into a literal, a uri_file into a uri_folder and back).
 *  - A `type: sweep` step (trial: a command component, search_space, objective, limits, sampling_algorithm)
 *    is bound as a command step whose search-space inputs are each trial's values (${AZUREML_SWEEP_X}), then
 *    made the job array's command job by bai_sweep_step (sweep.c); `sweep` holds its trials. Its outputs are
 *    its best trial's: the caller's job that picks the best after the array makes them (bound to no path).
 *  - Steps come out in an order where each one's dependencies come first.
 *  - An output bound to no path is the directory the site keeps for the step's job (an Azure ML command
 *    job's own output directory, BASE/<step>/<job id>/outputs/<name>, BASE the directory of the step
 *    files); a step that reads it gets that path once the producer's job id is known. */

#define BAI_PIPELINE_MAX_STEPS 64

/* An input of a step that reads another step's output. */
struct bai_pl_link {
    char *input;  /* the consumer's input */
    size_t from;  /* the producing step (index) */
    char *output; /* its output */
};

struct bai_pl_step {
    char *name;       /* the job name: the step's key; a nested pipeline's steps are OUTER.INNER */
    char *yaml_path;  /* jobs.S (jobs.OUTER.jobs.INNER) */
    struct cJSON *doc; /* the command job */
    size_t deps[BAI_PIPELINE_MAX_STEPS];
    size_t n_deps;
    struct bai_pl_link *links;
    size_t n_links;
    struct bai_sweep *sweep; /* a sweep step: doc is its trial, the array's command job; else NULL */
};

/* A pipeline output and the step output that makes it. */
struct bai_pl_output {
    char *name;
    size_t step;
    char *output;
};

struct bai_pipeline {
    struct bai_pl_step steps[BAI_PIPELINE_MAX_STEPS];
    size_t n_steps;
    struct bai_pl_output *outputs;
    size_t n_outputs;
    bool continue_on_step_failure;
    char *display_name; /* or NULL */
};

/* Whether the text is an Azure ML pipeline job (YAML with `type: pipeline`). */
bool bai_pipeline_detect(const char *text, size_t len);

/* Parse the pipeline whose text was read from `file` (an absolute path). Returns 0, or -1 with every fault
 * in d (the pipeline is then empty). */
int bai_pipeline_parse(const char *text, size_t len, const char *file, const struct bai_settings *site,
                       uint64_t seed, struct bai_pipeline *p, struct bai_diag *d);

/* The directory of step `step`'s output `output` once `jobid` is its job: its bound path, else under
 * `base` (above). New string, or NULL. */
char *bai_pipeline_output_path(const struct bai_pipeline *p, size_t step, const char *output, const char *base,
                               const char *jobid);

/* Step i's command job as JSON text, the paths of its links filled from jobids[] (each producer's job id).
 * New string, or NULL. */
char *bai_pipeline_step_text(const struct bai_pipeline *p, size_t i, const char *base, const char *const jobids[]);

void bai_pipeline_free(struct bai_pipeline *p);

/* ---- toolkits.c: the table of toolkits is the library's own (toolkits.h); outside it, a toolkit is named by
 * the JSON property that names it in a job file ("horovodSettings"). */
const char *bai_toolkit_name(const struct bai_toolkit *kind);

/* ---- steps.c: what the plugin sets in every task it prepared. */
/* Fail closed on a node where the plugin did not run. The plugin's task context sets BAI_PREPARED_VAR to
 * "<job id>:<node>" in every task it prepared, once it has checked that the prolog prepared the node; a
 * task on a node without the plugin (a configless node whose plugstack.conf includes files it lacks or whose
 * PlugStackConfig path is missing there, a plugin missing or built for another release) inherits srun's value
 * for another node or none. bai_node_check (steps.h) is the POSIX shell text, without single quotes, that every step
 * of the rendered script (and the batch script itself) runs first: it ends the task with status 1 and a
 * message naming the node and the likely causes unless the value is this task's. The causes are said once per
 * script, in the exported BAI_UNPREPARED_VAR, which srun passes on to every step. */
#define BAI_PREPARED_VAR "BATCHAI_NODE_PREPARED"
#define BAI_UNPREPARED_VAR "BATCHAI_UNPREPARED"
/* Beside it, the Slurm release the plugin was built for ("22.05.8"), which batchai-job check-site reports. */
#define BAI_PLUGIN_SLURM_VAR "BATCHAI_PLUGIN_SLURM"
/* Also in every task: the names of the job's variables the plugin set in it (the plan's environment, secrets
 * excepted; not the per-task ones), space-separated, and the job's container option (container_arg), when it
 * has one. batchai-job exec reads both from a first step on the node and hands them to the step it runs in the
 * container: on Slurm 22.05 slurmstepd writes a container's environment before the plugin's task context runs,
 * so only what srun passes reaches it. */
#define BAI_JOB_VARS_VAR "BATCHAI_JOB_VARS"
#define BAI_CONTAINER_VAR "BATCHAI_JOB_CONTAINER"

/* ---- sbuf.c: shell text (struct sbuf: common/strbuf.h). */
struct sbuf;
/* Append s as one single-quoted shell word ('it'\''s). Whatever s holds (newlines, quotes, $, `, ;, #,
 * spaces), the shell reads back exactly s, as one word, with nothing evaluated: strings that are not shell
 * text reach a shell line through this function. */
void sb_shell_quote(struct sbuf *b, const char *s);

#endif
