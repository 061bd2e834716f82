/* Site settings: the table every key, default and doc comes from, and its parser (see batchai_jobfile.h). */
#include "batchai_jobfile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* BAI_SET_CHOICE stores an index into an enum field. */
_Static_assert(sizeof(enum bai_runtime) == sizeof(int), "a choice is stored as an int");
_Static_assert(sizeof(enum bai_unmapped) == sizeof(int), "a choice is stored as an int");

#define FIELD(f) .offset = offsetof(struct bai_settings, f)
#define MAP(f) .map = true, FIELD(f), .count = offsetof(struct bai_settings, n_##f)

/* The rows in the order the docs list them. */
const struct bai_setting bai_setting_table[] = {
    { "shares_root", "DIR", BAI_SET_PATH, FIELD(shares_root), .def = "/srv/batchai/shares",
      .help = "A share NAME without a `share.NAME` setting is `DIR/NAME`, which must exist on the submit host." },
    { "share.NAME", "DIR", BAI_SET_PATH, MAP(shares),
      .help = "The site directory of the share NAME: an Azure file share, blob container or file server name "
              "of the job file." },
    { "mount_root", "DIR", BAI_SET_PATH, FIELD(mount_root), .def = "/srv/batchai/mounts",
      .help = "`AZ_BATCHAI_MOUNT_ROOT`, the cluster-level mounts.\nThe plugin never makes it: the admin "
              "makes DIR on every node (`install -d -m 0755 DIR`) and mounts there what Batch AI's cluster "
              "`mountVolumes` were (NFS, file shares), as /etc/fstab or a systemd mount does at boot; "
              "`batchai-job check-site` fails on a node where it is missing." },
    { "job_root", "DIR", BAI_SET_PATH, FIELD(job_root), .def = "/var/lib/batchai/jobs",
      .help = "The per-job directories: `DIR/<jobid>/mounts` is `AZ_BATCHAI_JOB_MOUNT_ROOT`.\n"
              "Every component of DIR must be root's and writable by root alone (checked on the nodes; see "
              "SECURITY)." },
    { "job_temp", "DIR", BAI_SET_PATH, FIELD(job_temp), .def = "/tmp/batchai",
      .help = "Node-local scratch, like the BasePath of Slurm's job_container/tmpfs: `DIR/<jobid>.<node>` is "
              "`AZ_BATCHAI_JOB_TEMP`, the user's, made by the prolog and removed by the epilog.\n"
              "DIR itself must be root's and writable by root alone; its parents too, except that a "
              "root-owned sticky directory (`/tmp`) may be one.\n"
              "slurmd at its start and the prolog make DIR when it is missing; where users can write the parent, "
              "`make install` and the packages have it made at boot (`tmpfiles.d/slurm-batchai.conf`: "
              "`d /tmp/batchai 0755 root root -`; for another DIR, write that line for it). A name a user "
              "took first there (their directory, link or FIFO) is moved aside, untouched, to "
              "`DIR.taken-by-uid-<uid>.<time>` and named in slurmd's log and by check-site." },
    { "container_runtime", "oci|pyxis|none", BAI_SET_CHOICE, FIELD(runtime), .def = "oci",
      .help = "How `containerSettings` run: `oci`, Slurm's `--container` with staged OCI bundles; `pyxis`, "
              "`--container-image`; `none` refuses jobs with a container." },
    { "image_root", "DIR", BAI_SET_PATH, FIELD(image_root), .def = "/var/lib/batchai/images",
      .help = "With `oci`, the bundle of image I is `DIR/I` with `/`, `:` and `@` replaced by `_` "
              "(`repo/name:tag` is `DIR/repo_name_tag`), unless `image.I` is set." },
    { "image.IMAGE", "DIR", BAI_SET_PATH, MAP(images),
      .help = "With `oci`, the bundle directory of IMAGE." },
    { "priority.low", "qos:NAME|nice:N|none", BAI_SET_PRIORITY, FIELD(priority[BAI_PRIORITY_LOW]),
      .def = "nice:100",
      .help = "How a job's `schedulingPriority` low becomes `--qos` or `--nice`." },
    { "priority.normal", "qos:NAME|nice:N|none", BAI_SET_PRIORITY, FIELD(priority[BAI_PRIORITY_NORMAL]),
      .def = "none", .help = "The same for normal priority." },
    { "priority.high", "qos:NAME|nice:N|none", BAI_SET_PRIORITY, FIELD(priority[BAI_PRIORITY_HIGH]),
      .def = "none", .help = "The same for high priority." },
    { "cluster.ID", "PARTITION", BAI_SET_STRING, MAP(clusters),
      .help = "The last segment of the job's `cluster.id`, ID, or an Azure ML command job's `compute` without "
              "`azureml:`, or the cluster the user names at submission (`sbatch --batchai-cluster=ID`, "
              "`batchai-job --cluster ID`), becomes `--partition=PARTITION`." },
    { "gpus.ID", "N|TYPE:N", BAI_SET_GPUS, MAP(gpus),
      .help = "The GPUs of each node of cluster ID's partition (ID as in `cluster.ID`), instead of `gpus_per_node`: "
              "every job on it asks Slurm for them, `--gpus-per-node=N`, or `--gres=gpu:TYPE:N` where the site's "
              "GPUs are typed in gres.conf (`gpus.nc24=a100:4`).\n"
              "`gpus.ID=0`: a cluster without GPUs." },
    { "instance_type.NAME", "N|TYPE:N", BAI_SET_GPUS, MAP(instance_types),
      .help = "An Azure ML job's `resources.instance_type` NAME (`instance_type.Standard_NC24ads_A100_v4=a100:1`) "
              "is that many GPUs per node on the job's `compute` partition, instead of its `gpus.ID`.\n"
              "An instance type that is not mapped is refused by name." },
    { "unmapped_cluster", "refuse|partition", BAI_SET_CHOICE, FIELD(unmapped_cluster), .def = "refuse",
      .help = "A job whose cluster (`cluster.id`, `compute`, `--batchai-cluster`) has no `cluster.ID`: `refuse`, by name, with the "
              "setting that would map it; `partition`, run it on `partition` (or Slurm's default) with "
              "`gpus_per_node`." },
    { "environment.REF", "IMAGE", BAI_SET_STRING, MAP(environments),
      .help = "An Azure ML command job's `environment` reference REF, written as the job writes it "
              "(`environment.azureml:AzureML-acpt-pytorch-2.8-cuda12.6@latest=nvcr.io/nvidia/pytorch:24.05-py3`), "
              "runs in IMAGE under the container runtime, as `environment.image` would; `host` runs it on the "
              "nodes' own software, without a container; REF may also be an image a job names "
              "(`environment.python=host`).\n"
              "A reference that is not mapped is refused by name." },
    { "component.REF", "FILE", BAI_SET_PATH, MAP(components),
      .help = "An Azure ML pipeline step's registered component REF (`component.azureml:my_train@latest="
              "/srv/components/train.yml`, or `azureml:NAME:VERSION`) is the component file FILE, read "
              "by `batchai-job` at submission.\n"
              "A component that is not mapped is refused by name." },
    { "data.REF", "DIR", BAI_SET_PATH, MAP(data),
      .help = "An Azure ML data asset REF (`data.azureml:cifar-10-example@latest=/srv/datasets/cifar-10`) is "
              "the directory DIR.\n"
              "Datastores are shares: `azureml://datastores/NAME/paths/...` and blob URLs of container NAME go "
              "through `share.NAME` or `shares_root`; a share without its directory is refused at submission "
              "by name." },
    { "partition", "NAME", BAI_SET_STRING, FIELD(partition),
      .help = "`--partition` of a job without a cluster (or, under `unmapped_cluster=partition`, with an unmapped "
              "one); unset, Slurm's default partition." },
    { "allow_mount_command", "yes|no", BAI_SET_BOOL, FIELD(allow_mount_command), .def = "no",
      .help = "Whether `unmanagedFileSystems` may run their `mountCommand`, as the user, never as root." },
    { "user_shares", "yes|no", BAI_SET_BOOL, FIELD(user_shares), .def = "yes",
      .help = "Whether a user may map a share of a job to a directory of their own at submission "
              "(`sbatch --batchai-share=NAME=DIR`, `batchai-job --share NAME=DIR`), for that job only and to a "
              "directory the user can read: the nodes reach it as the user, never as root." },
    { "python", "PATH", BAI_SET_STRING, FIELD(python), .def = "python3",
      .help = "The default `pythonInterpreterPath`." },
    { "mpi", "PLUGIN", BAI_SET_STRING, FIELD(mpi), .def = "pmix",
      .help = "`srun --mpi=PLUGIN` for the MPI toolkits." },
    { "gpus_per_node", "N", BAI_SET_INT, FIELD(gpus_per_node), .min = 0, .max = 1024, .def = "0",
      .help = "The GPUs of each node (0 to 1024) of `partition` and of every mapped cluster without `gpus.ID`: "
              "a job asks for them with `--gpus-per-node=N`.\n"
              "Each task's `AZ_BATCHAI_NUM_GPUS` is what Slurm allocated on its node (`SLURM_GPUS_ON_NODE`)." },
    { "settings_file", "PATH", BAI_SET_INCLUDE,
      .help = "Read more settings from PATH, one per line, `#` starting a comment; on the plugstack line only, "
              "not in such a file.\n"
              "Keep it root-owned and writable by root alone." },
};
const size_t bai_setting_count = sizeof bai_setting_table / sizeof bai_setting_table[0];

static int apply_row(struct bai_settings *s, const struct bai_setting *row, const char *key, const char *v,
                     const char *where, bool allow_file, bool replace, struct bai_diag *diag);

int bai_settings_init(struct bai_settings *s)
{
    struct bai_diag d = { 0 };
    int rc = 0;

    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < bai_setting_count && rc == 0; i++)
        if (bai_setting_table[i].def)
            rc = apply_row(s, &bai_setting_table[i], bai_setting_table[i].key, bai_setting_table[i].def,
                           "default", false, false, &d);
    bai_diag_free(&d);
    if (rc != 0)
        bai_settings_free(s);
    return rc;
}

static int set_string(char **field, const char *value)
{
    char *copy = strdup(value);

    if (!copy)
        return -1;
    free(*field);
    *field = copy;
    return 0;
}

/* Absolute, no ".." segment: admins' paths end up in job environments and mount targets. */
static bool good_dir(const char *v)
{
    if (v[0] != '/')
        return false;
    for (const char *p = v; (p = strstr(p, "..")) != NULL; p += 2)
        if (p[-1] == '/' && (p[2] == '\0' || p[2] == '/'))
            return false;
    return true;
}

/* Add key=value to a map; an existing key is a duplicate (1), or, with `replace`, gets the new value. */
static int add_map(struct bai_kv **list, size_t *n, const char *key, const char *value, bool replace)
{
    struct bai_kv *grown;

    for (size_t i = 0; i < *n; i++)
        if (strcmp((*list)[i].key, key) == 0) {
            if (!replace)
                return 1; /* duplicate */
            char *copy = strdup(value);
            if (!copy)
                return -1;
            free((*list)[i].value);
            (*list)[i].value = copy;
            return 0;
        }
    grown = realloc(*list, (*n + 1) * sizeof **list);
    if (!grown)
        return -1;
    *list = grown;
    grown[*n].key = strdup(key);
    grown[*n].value = strdup(value);
    if (!grown[*n].key || !grown[*n].value) {
        free(grown[*n].key);
        free(grown[*n].value);
        return -1;
    }
    (*n)++;
    return 0;
}

static int parse_prio(struct bai_prio_map *m, const char *v)
{
    char *end;
    long nice;

    if (strncmp(v, "qos:", 4) == 0 && v[4]) {
        m->kind = BAI_PRIO_QOS;
        return set_string(&m->qos, v + 4);
    }
    if (strncmp(v, "nice:", 5) == 0) {
        errno = 0;
        nice = strtol(v + 5, &end, 10);
        if (errno || *end || end == v + 5 || nice < -2147483645L || nice > 2147483645L)
            return 1;
        m->kind = BAI_PRIO_NICE;
        m->nice = (int)nice;
        return 0;
    }
    if (strcmp(v, "none") == 0) {
        m->kind = BAI_PRIO_NONE;
        return 0;
    }
    return 1;
}

/* Whether `word` is one of the '|'-separated words of `list`; *index is its position. */
static bool choice_index(const char *list, const char *word, int *index)
{
    size_t n = strlen(word);

    for (int i = 0; *list; i++) {
        size_t len = strcspn(list, "|");
        if (len == n && strncmp(list, word, n) == 0) {
            *index = i;
            return true;
        }
        list += len + (list[len] == '|');
    }
    return false;
}

/* Set the field of `row` from value `v` of word `key`. Returns 0, or -1 with a diag entry. */
static int apply_row(struct bai_settings *s, const struct bai_setting *row, const char *key, const char *v,
                     const char *where, bool allow_file, bool replace, struct bai_diag *diag)
{
    void *field = (char *)s + row->offset;
    const char *name = row->map ? key + (strchr(row->key, '.') - row->key) + 1 : NULL;
    char *end;
    long n;
    int rc = 0, index;

    if (row->map && !*name) {
        bai_diag_add(diag, where, "%s: the name after the dot is missing", key);
        return -1;
    }
    if (row->type == BAI_SET_PATH && !good_dir(v)) {
        bai_diag_add(diag, where, "%s: expected an absolute directory without \"..\", got \"%.80s\"", key, v);
        return -1;
    }
    switch (row->type) {
    case BAI_SET_GPUS:
        if (bai_gpus_parse(v, &(struct bai_gpus){ 0 }) != 0) {
            bai_diag_add(diag, where, "%s: expected N or TYPE:N (N from 0 to 1024), got \"%.40s\"", key, v);
            return -1;
        }
        __attribute__((fallthrough)); /* stored as a string */
    case BAI_SET_PATH: /* checked above, stored as a string */
    case BAI_SET_STRING:
        if (row->map) {
            rc = add_map(field, (size_t *)((char *)s + row->count), name, v, replace);
            if (rc > 0) {
                bai_diag_add(diag, where, "%s: given twice", key);
                return -1;
            }
        } else
            rc = set_string(field, v);
        break;
    case BAI_SET_BOOL:
        if (!choice_index("no|yes", v, &index)) {
            bai_diag_add(diag, where, "%s: expected yes or no, got \"%.40s\"", key, v);
            return -1;
        }
        *(bool *)field = index == 1;
        break;
    case BAI_SET_INT:
        errno = 0;
        n = strtol(v, &end, 10);
        if (errno || *end || n < row->min || n > row->max) {
            bai_diag_add(diag, where, "%s: expected an integer from %ld to %ld, got \"%.40s\"", key, row->min,
                         row->max, v);
            return -1;
        }
        *(int *)field = (int)n;
        break;
    case BAI_SET_CHOICE:
        if (!choice_index(row->arg, v, &index)) {
            bai_diag_add(diag, where, "%s: expected one of %s, got \"%.40s\"", key, row->arg, v);
            return -1;
        }
        memcpy(field, &index, sizeof index);
        break;
    case BAI_SET_PRIORITY:
        rc = parse_prio(field, v);
        if (rc > 0) {
            bai_diag_add(diag, where, "%s: expected qos:NAME, nice:N or none, got \"%.40s\"", key, v);
            return -1;
        }
        break;
    case BAI_SET_INCLUDE:
        if (!allow_file) {
            bai_diag_add(diag, where, "%s: not allowed here (settings files do not nest)", key);
            return -1;
        }
        return bai_settings_load_file(s, v, diag);
    }
    if (rc < 0) {
        bai_diag_add(diag, where, "%s: out of memory", key);
        return -1;
    }
    return 0;
}

/* The row for `key`: its own name, or a map's prefix up to the dot. */
static const struct bai_setting *find_row(const char *key)
{
    for (size_t i = 0; i < bai_setting_count; i++) {
        const struct bai_setting *row = &bai_setting_table[i];
        if (row->map ? strncmp(key, row->key, (size_t)(strchr(row->key, '.') - row->key) + 1) == 0
                     : strcmp(key, row->key) == 0)
            return row;
    }
    return NULL;
}

static int apply_word(struct bai_settings *s, const char *word, const char *where, bool allow_file, bool replace,
                      struct bai_diag *diag)
{
    const struct bai_setting *row;
    const char *eq = strchr(word, '=');
    char key[128];
    const char *v;

    if (!eq || eq == word || (size_t)(eq - word) >= sizeof key) {
        bai_diag_add(diag, where, "\"%.80s\": expected key=value", word);
        return -1;
    }
    memcpy(key, word, (size_t)(eq - word));
    key[eq - word] = '\0';
    v = eq + 1;
    if (!*v) {
        bai_diag_add(diag, where, "%s: empty value", key);
        return -1;
    }
    for (const char *p = v; *p; p++)
        if (iscntrl((unsigned char)*p) || *p == ' ') {
            bai_diag_add(diag, where, "%s: the value must not contain spaces or control characters", key);
            return -1;
        }
    row = find_row(key);
    if (!row) {
        bai_diag_add(diag, where, "unknown setting \"%.60s\" (see spank_batchai(8) for the keys)", key);
        return -1;
    }
    return apply_row(s, row, key, v, where, allow_file, replace, diag);
}

int bai_settings_apply(struct bai_settings *s, const char *word, const char *where, bool allow_file,
                       struct bai_diag *diag)
{
    return apply_word(s, word, where, allow_file, false, diag);
}

int bai_settings_override(struct bai_settings *s, const char *word, const char *where, struct bai_diag *diag)
{
    return apply_word(s, word, where, false, true, diag);
}

int bai_settings_load_file(struct bai_settings *s, const char *path, struct bai_diag *diag)
{
    char line[4096], where[PATH_MAX + 32];
    unsigned lineno = 0;
    int rc = 0;
    struct stat st;
    /* Root reads this in every prolog: a FIFO in its place must not stall slurmd. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    FILE *f = NULL;

    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "r"))) {
        bai_diag_add(diag, path, "cannot read settings file: %s", fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char *p = line, *end;
        lineno++;
        snprintf(where, sizeof where, "%s:%u", path, lineno);
        if (!strchr(line, '\n') && !feof(f)) {
            bai_diag_add(diag, where, "line longer than %zu bytes", sizeof line - 1);
            rc = -1;
            break;
        }
        if ((end = strchr(p, '#')))
            *end = '\0';
        while (isspace((unsigned char)*p))
            p++;
        end = p + strlen(p);
        while (end > p && isspace((unsigned char)end[-1]))
            *--end = '\0';
        if (*p && bai_settings_apply(s, p, where, false, diag) != 0)
            rc = -1;
    }
    fclose(f);
    return rc;
}

static const char *map_lookup(const struct bai_kv *list, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].key, key) == 0)
            return list[i].value;
    return NULL;
}

char *bai_settings_share_path(const struct bai_settings *s, const char *name)
{
    const char *mapped = map_lookup(s->shares, s->n_shares, name);
    char *out;

    if (mapped)
        return strdup(mapped);
    return asprintf(&out, "%s/%s", s->shares_root, name) < 0 ? NULL : out;
}

char *bai_settings_image_target(const struct bai_settings *s, const char *image)
{
    const char *mapped;
    char *out;

    switch (s->runtime) {
    case BAI_RUNTIME_PYXIS:
        return strdup(image);
    case BAI_RUNTIME_OCI:
        mapped = map_lookup(s->images, s->n_images, image);
        if (mapped)
            return strdup(mapped);
        if (asprintf(&out, "%s/%s", s->image_root, image) < 0)
            return NULL;
        /* One directory per image: '/' and ':' of the reference become '_'. */
        for (char *p = out + strlen(s->image_root) + 1; *p; p++)
            if (*p == '/' || *p == ':' || *p == '@')
                *p = '_';
        return out;
    case BAI_RUNTIME_NONE:
        break;
    }
    return NULL;
}

const char *bai_settings_cluster_partition(const struct bai_settings *s, const char *cluster_name)
{
    return map_lookup(s->clusters, s->n_clusters, cluster_name);
}

const char *bai_settings_cluster_gpus(const struct bai_settings *s, const char *cluster_name)
{
    return map_lookup(s->gpus, s->n_gpus, cluster_name);
}

const char *bai_settings_instance_gpus(const struct bai_settings *s, const char *instance_type)
{
    return map_lookup(s->instance_types, s->n_instance_types, instance_type);
}

int bai_gpus_parse(const char *v, struct bai_gpus *out)
{
    const char *colon = strchr(v, ':'), *num = colon ? colon + 1 : v;
    size_t tlen = colon ? (size_t)(colon - v) : 0;
    char *end;
    long n;

    memset(out, 0, sizeof *out);
    if (colon && (tlen == 0 || tlen >= sizeof out->type))
        return -1;
    for (size_t i = 0; i < tlen; i++)
        if (!isalnum((unsigned char)v[i]) && !strchr("_-.", v[i]))
            return -1;
    errno = 0;
    n = strtol(num, &end, 10);
    if (errno || end == num || *end || !isdigit((unsigned char)*num) || n > 1024)
        return -1;
    memcpy(out->type, v, tlen);
    out->count = (int)n;
    return 0;
}

const char *bai_settings_environment_image(const struct bai_settings *s, const char *ref)
{
    return map_lookup(s->environments, s->n_environments, ref);
}

const char *bai_settings_component_file(const struct bai_settings *s, const char *ref)
{
    return map_lookup(s->components, s->n_components, ref);
}

const char *bai_settings_data_dir(const struct bai_settings *s, const char *ref)
{
    return map_lookup(s->data, s->n_data, ref);
}

static void free_map(struct bai_kv *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(list[i].key);
        free(list[i].value);
    }
    free(list);
}

/* What each row owns, freed by its type: adding a row needs nothing here. */
void bai_settings_free(struct bai_settings *s)
{
    for (size_t i = 0; i < bai_setting_count; i++) {
        const struct bai_setting *row = &bai_setting_table[i];
        void *field = (char *)s + row->offset;
        if (row->map)
            free_map(*(struct bai_kv **)field, *(size_t *)((char *)s + row->count));
        else if (row->type == BAI_SET_PATH || row->type == BAI_SET_STRING || row->type == BAI_SET_GPUS)
            free(*(char **)field);
        else if (row->type == BAI_SET_PRIORITY)
            free(((struct bai_prio_map *)field)->qos);
    }
    memset(s, 0, sizeof *s);
}
