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
#ifndef BAI_SETTINGS_H
#define BAI_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

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

#endif
