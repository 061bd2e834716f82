/* Site settings: how an admin maps Batch AI concepts onto the site.
 *
 * The same "key=value" words are taken as plugstack.conf arguments by the plugin and as lines of a settings
 * file (`settings_file=PATH` in plugstack, `--settings FILE` for batchai-job; '#' starts a comment). An
 * unknown key, a malformed value or a duplicate is an error naming the word: a typo never passes silently.
 *
 *   key                        default                     meaning
 *   shares_root=DIR            /srv/batchai/shares         a share NAME with no share.NAME maps to DIR/NAME
 *   share.NAME=DIR             -                           the site path of share NAME (azure file share
 *                                                          name, blob container name or file server name)
 *   mount_root=DIR             /srv/batchai/mounts         AZ_BATCHAI_MOUNT_ROOT (cluster-level mounts)
 *   job_root=DIR               /var/lib/batchai/jobs       per-job directories: DIR/<jobid>/mounts is
 *                                                          AZ_BATCHAI_JOB_MOUNT_ROOT, DIR/<jobid>/temp
 *                                                          AZ_BATCHAI_JOB_TEMP; every component of DIR must
 *                                                          be root's and writable by root alone (checked on
 *                                                          the nodes, see SECURITY.md)
 *   container_runtime=KIND     oci                         oci (Slurm's --container with staged OCI
 *                                                          bundles), pyxis (--container-image), none
 *                                                          (jobs with containerSettings are refused)
 *   image_root=DIR             /var/lib/batchai/images     oci: bundle of image I is DIR/<I with '/' and
 *                                                          ':' replaced by '_'> unless image.I is set
 *   image.IMAGE=DIR            -                           oci: the bundle directory of IMAGE
 *   priority.low|normal|high=qos:NAME | nice:N             how schedulingPriority becomes --qos or --nice
 *                              low=nice:100, normal, high  (normal and high: nothing by default)
 *   cluster.ID=PARTITION       -                           cluster.id's last segment (an Azure ML job's
 *                                                          compute without "azureml:") -> --partition
 *   environment.REF=IMAGE      -                           Azure ML: the image of environment REF, written
 *                                                          as the job writes it (azureml:NAME@latest, ...)
 *   data.REF=DIR               -                           Azure ML: the directory of data asset REF
 *                                                          (azureml:NAME:VERSION, ...)
 *   partition=NAME             -                           --partition when no cluster map applies
 *   allow_mount_command=yes|no no                          whether unmanagedFileSystems may run their
 *                                                          mountCommand (as the user, never as root)
 *   python=PATH                python3                     default pythonInterpreterPath
 *   mpi=PLUGIN                 pmix                        srun --mpi= for MPI toolkits
 *   gpus_per_node=N            0                           AZ_BATCHAI_NUM_GPUS
 *   settings_file=PATH         -                           read more settings from PATH (plugstack only,
 *                                                          not nested)
 */
#ifndef BAI_SETTINGS_H
#define BAI_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

enum bai_runtime { BAI_RUNTIME_OCI = 0, BAI_RUNTIME_PYXIS, BAI_RUNTIME_NONE };

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
    char *image_root;
    char *partition;          /* NULL: Slurm's default partition */
    char *python;
    char *mpi;
    enum bai_runtime runtime;
    bool allow_mount_command;
    int gpus_per_node;
    struct bai_prio_map priority[3]; /* indexed by enum bai_priority */
    struct bai_kv *shares;   size_t n_shares;
    struct bai_kv *images;   size_t n_images;
    struct bai_kv *clusters; size_t n_clusters;
    struct bai_kv *environments; size_t n_environments; /* Azure ML environment reference -> image */
    struct bai_kv *data;     size_t n_data;            /* Azure ML data asset reference -> directory */
};

/* Fill in the documented defaults. Returns 0, or -1 on allocation failure. */
int bai_settings_init(struct bai_settings *s);

/* Apply one "key=value" word. `where` names its origin for messages (e.g. "plugstack.conf" or
 * "site.conf:12"). Returns 0, or -1 with a diag entry. A settings_file= word is only accepted when
 * allow_file is true; it then loads that file. */
int bai_settings_apply(struct bai_settings *s, const char *word, const char *where, bool allow_file,
                       struct bai_diag *diag);

/* Apply every line of a settings file. Returns 0, or -1 with a diag entry per bad line. */
int bai_settings_load_file(struct bai_settings *s, const char *path, struct bai_diag *diag);

/* The site path of share `name`: share.NAME, else shares_root/NAME. Newly allocated, or NULL on OOM. */
char *bai_settings_share_path(const struct bai_settings *s, const char *name);

/* The container target of `image` for the configured runtime: the bundle directory (oci) or the image
 * reference itself (pyxis). NULL for runtime none. Newly allocated. */
char *bai_settings_image_target(const struct bai_settings *s, const char *image);

/* The partition mapped to a cluster name (the last segment of cluster.id), or NULL. */
const char *bai_settings_cluster_partition(const struct bai_settings *s, const char *cluster_name);

/* The image an Azure ML environment reference maps to (environment.REF), or NULL. */
const char *bai_settings_environment_image(const struct bai_settings *s, const char *ref);

/* The directory an Azure ML data asset reference maps to (data.REF), or NULL. */
const char *bai_settings_data_dir(const struct bai_settings *s, const char *ref);

void bai_settings_free(struct bai_settings *s);

#endif
