/* Translation of a validated job into a Slurm job: the plan, and the batch script rendered from it.
 *
 * The plan is the single source of truth shared by `batchai-job translate` and the SPANK plugin, and a
 * plain value: it owns every string it holds and points into no job, so whoever holds it needs nothing else:
 *  - the allocation (what becomes #SBATCH lines),
 *  - the host paths that Batch AI paths resolve to (log directory, mounts),
 *  - the environment every task sees,
 *  - the preparation step and the main step as shell text.
 * Translation is pure: it reads no file and touches nothing on the host, so it is deterministic and safe to
 * run anywhere. Checks that need the host (does a share's directory exist? is a bundle staged?) are made by
 * the plugin at submit time with bai_plan_check_host().
 *
 * Paths that depend on the Slurm job id carry the token "%j" (as sbatch's --output does); the batch script
 * renders them as ${SLURM_JOB_ID}, the plugin substitutes the id with bai_expand_jobid(). */
#ifndef BAI_TRANSLATE_H
#define BAI_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "job.h"
#include "settings.h"

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
    int signal_before_limit; /* > 0: the main step is the bundled cifar-train, which checkpoints on SIGUSR1:
                              * the script asks for it that many seconds before the time limit
                              * (--signal=B:USR1@N) and passes it on to the step; 0: none */
    /* What the script's comments say the lines came from. */
    struct {
        int node_count;
        bool process_count_given;
        bool default_wall_time;  /* maxWallClockTime absent: Batch AI's 7 days */
        char *out_err_prefix;    /* stdOutErrPathPrefix as the file says it */
        char *cluster_id;        /* cluster.id, or NULL */
        char *gpu_setting;       /* the site setting the GPU count came from ("gpus.nc6"), or NULL */
        char *image, *shm_size;  /* containerSettings, or NULL */
        const char *toolkit;     /* the toolkit's property name, e.g. "horovodSettings" (static) */
        bool aml;                /* an Azure ML command job: the comments name its fields */
    } origin;
};

/* The trainer needs one step and one checkpoint after the warning (seconds at most on a CPU); Slurm may send
 * it up to 60 s earlier than asked, never later. */
#define BAI_TRAINER_WARNING_SECONDS 60

/* A user's own share maps, "NAME=DIR[,NAME=DIR...]" (sbatch --batchai-share, batchai-job --share): for this
 * job, share NAME is the user's directory DIR, where the site allows it (user_shares). */
#define BAI_USER_SHARES_MAX 16

struct bai_translate_opts {
    const char *job_name;  /* default: the job file's base name without .json / .job.json */
    const char *job_file;  /* the job file's path as the user gave it (for --batchai-job= and comments) */
    const char *user_shares; /* NULL or the user's share maps (above) */
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

/* Render the batch script: #SBATCH lines, comments that explain non-obvious mappings, the preparation
 * step (once per node, as the user, output in the Batch AI log layout, failure naming node and exit
 * code), and the main step. Secret values never appear in it. Newly allocated, NULL on OOM. */
char *bai_render_script(const struct bai_plan *plan);

/* The shell text that runs the node steps of a job whose user gave their own script: the same mount and
 * preparation steps as the rendered script, run from the batch step by the plugin. NULL when the job has
 * none (bai_plan_has_node_steps) or on OOM. */
char *bai_render_node_script(const struct bai_plan *plan);


/* Does the job have node steps (a preparation command or an unmanaged mountCommand)? */
bool bai_plan_has_node_steps(const struct bai_plan *plan);

/* Check the plan against the site's policy, touching nothing on the host: no unmanaged mountCommand unless
 * allow_mount_command=yes, no key-vault secret. The allocator and every node (prolog and tasks) check it, so
 * a job that bypassed sbatch, or a file changed after submission, is held to the same policy. Returns 0, or
 * -1 with faults in diag. */
int bai_plan_check_policy(const struct bai_plan *plan, struct bai_diag *diag);

/* bai_plan_check_policy, then the host, at submit time: share directories exist, container bundles are
 * staged. Returns 0, or -1 with faults in diag. */
int bai_plan_check_host(const struct bai_plan *plan, struct bai_diag *diag);

/* Fail closed on a node where the plugin did not run. The plugin's task context sets BAI_PREPARED_VAR to
 * "<job id>:<node>" in every task it prepared, once it has checked that the prolog prepared the node; a
 * task on a node without the plugin (a configless node whose plugstack.conf includes files it lacks or whose
 * PlugStackConfig path is missing there, a plugin missing or built for another release) inherits srun's value
 * for another node or none. bai_node_check is the POSIX shell text, without single quotes, that every step
 * of the rendered script (and the batch script itself) runs first: it ends the task with status 1 and a
 * message naming the node and the likely causes unless the value is this task's. The causes are said once per
 * script, in the exported BAI_UNPREPARED_VAR, which srun passes on to every step. */
/* The experiment is kept in the Slurm job's comment as "batchai-experiment=NAME": from an Azure ML file's
 * experiment_name (the rendered script's #SBATCH --comment) or `batchai-job submit --experiment NAME`. */
#define BAI_EXPERIMENT_TAG "batchai-experiment="
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
extern const char bai_node_check[];

/* Replace every "%j" in pattern with jobid. Newly allocated, NULL on OOM. */
char *bai_expand_jobid(const char *pattern, const char *jobid);

/* Replace every "%N" in pattern with node, the node's name: the job temp is one per node, also where
 * several slurmd share a host. The plugin passes SLURMD_NODENAME's value, the script "${SLURMD_NODENAME}"
 * inside a step (never in the batch step's own code, which runs on the first node only). */
char *bai_expand_node(const char *pattern, const char *node);

/* Format seconds as Slurm's --time: "D-HH:MM:SS" (or "HH:MM:SS" under a day) into buf. */
void bai_format_time(long seconds, char *buf, size_t size);

void bai_plan_free(struct bai_plan *plan);

/* For the job formats' and toolkits' translators (azureml_plan.c, toolkits.c). One srun step of the plan, appended to b: its options
 * (--mpi, --ntasks, extra_opts, --chdir, the container), then the command evaluated by /bin/sh in each task
 * after bai_node_check and `export AZ_BATCHAI_TASK_INDEX=$SLURM_PROCID <prelude>`, on lines of its own. */
struct sbuf;
void bai_plan_step(struct sbuf *b, const struct bai_plan *plan, const struct bai_settings *site, bool mpi,
                   int ntasks, const char *extra_opts, const char *prelude, const char *command);
/* torch.distributed's rendezvous on the job's first node: MASTER_ADDR (its NodeAddr), MASTER_PORT, WORLD_SIZE
 * exported by the batch script, in an export line left open for more variables (the caller ends it). */
void bai_pytorch_rendezvous(struct sbuf *b, int world_size);

#endif
