/* The plan: a validated job translated into a Slurm job (translate.h builds it, render.h renders it), and the
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
#ifndef BAI_PLAN_H
#define BAI_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "job.h"

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
    int signal_before_limit; /* > 0: the main step is checkpointable (job.h), and checkpoints on SIGUSR1: the
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

#endif
