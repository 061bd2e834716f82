/* Site settings: see settings.h for every key and its default. */
#include "settings.h"

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

#include "job.h"


int bai_settings_init(struct bai_settings *s)
{
    memset(s, 0, sizeof *s);
    s->shares_root = strdup("/srv/batchai/shares");
    s->mount_root = strdup("/srv/batchai/mounts");
    s->job_root = strdup("/var/lib/batchai/jobs");
    s->image_root = strdup("/var/lib/batchai/images");
    s->python = strdup("python3");
    s->mpi = strdup("pmix");
    s->runtime = BAI_RUNTIME_OCI;
    s->priority[BAI_PRIORITY_LOW].kind = BAI_PRIO_NICE;
    s->priority[BAI_PRIORITY_LOW].nice = 100;
    if (!s->shares_root || !s->mount_root || !s->job_root || !s->image_root || !s->python || !s->mpi) {
        bai_settings_free(s);
        return -1;
    }
    return 0;
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

static int add_map(struct bai_kv **list, size_t *n, const char *key, const char *value)
{
    struct bai_kv *grown;

    for (size_t i = 0; i < *n; i++)
        if (strcmp((*list)[i].key, key) == 0)
            return 1; /* duplicate */
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

int bai_settings_apply(struct bai_settings *s, const char *word, const char *where, bool allow_file,
                       struct bai_diag *diag)
{
    static const struct { const char *key; size_t off; bool dir; } strings[] = {
        { "shares_root", offsetof(struct bai_settings, shares_root), true },
        { "mount_root", offsetof(struct bai_settings, mount_root), true },
        { "job_root", offsetof(struct bai_settings, job_root), true },
        { "image_root", offsetof(struct bai_settings, image_root), true },
        { "partition", offsetof(struct bai_settings, partition), false },
        { "python", offsetof(struct bai_settings, python), false },
        { "mpi", offsetof(struct bai_settings, mpi), false },
    };
    const char *eq = strchr(word, '=');
    char key[128];
    const char *v;
    int rc = 0;

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
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        if (strcmp(key, strings[i].key) != 0)
            continue;
        if (strings[i].dir && !good_dir(v)) {
            bai_diag_add(diag, where, "%s: expected an absolute directory without \"..\", got \"%.80s\"", key, v);
            return -1;
        }
        rc = set_string((char **)((char *)s + strings[i].off), v);
        goto done;
    }
    if (strcmp(key, "container_runtime") == 0) {
        if (strcmp(v, "oci") == 0)
            s->runtime = BAI_RUNTIME_OCI;
        else if (strcmp(v, "pyxis") == 0)
            s->runtime = BAI_RUNTIME_PYXIS;
        else if (strcmp(v, "none") == 0)
            s->runtime = BAI_RUNTIME_NONE;
        else {
            bai_diag_add(diag, where, "container_runtime: expected oci, pyxis or none, got \"%.40s\"", v);
            return -1;
        }
    } else if (strcmp(key, "allow_mount_command") == 0) {
        if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0) {
            bai_diag_add(diag, where, "allow_mount_command: expected yes or no, got \"%.40s\"", v);
            return -1;
        }
        s->allow_mount_command = strcmp(v, "yes") == 0;
    } else if (strcmp(key, "gpus_per_node") == 0) {
        char *end;
        long n;
        errno = 0;
        n = strtol(v, &end, 10);
        if (errno || *end || n < 0 || n > 1024) {
            bai_diag_add(diag, where, "gpus_per_node: expected an integer from 0 to 1024, got \"%.40s\"", v);
            return -1;
        }
        s->gpus_per_node = (int)n;
    } else if (strncmp(key, "priority.", 9) == 0) {
        size_t i;
        for (i = 0; bai_priority_names[i] && strcmp(key + 9, bai_priority_names[i]) != 0; i++)
            ;
        if (!bai_priority_names[i]) {
            bai_diag_add(diag, where, "%s: unknown priority (low, normal, high)", key);
            return -1;
        }
        rc = parse_prio(&s->priority[i], v);
        if (rc > 0) {
            bai_diag_add(diag, where, "%s: expected qos:NAME, nice:N or none, got \"%.40s\"", key, v);
            return -1;
        }
    } else if (strncmp(key, "share.", 6) == 0 || strncmp(key, "image.", 6) == 0 || strncmp(key, "cluster.", 8) == 0 ||
               strncmp(key, "environment.", 12) == 0 || strncmp(key, "data.", 5) == 0) {
        /* Which map a key goes to, and whether its value is a directory. */
        static const struct {
            const char *prefix;
            size_t offset, count;
            bool dir;
        } maps[] = {
            { "share.", offsetof(struct bai_settings, shares), offsetof(struct bai_settings, n_shares), true },
            { "image.", offsetof(struct bai_settings, images), offsetof(struct bai_settings, n_images), true },
            { "cluster.", offsetof(struct bai_settings, clusters), offsetof(struct bai_settings, n_clusters), false },
            { "environment.", offsetof(struct bai_settings, environments), offsetof(struct bai_settings, n_environments),
              false },
            { "data.", offsetof(struct bai_settings, data), offsetof(struct bai_settings, n_data), true },
        };
        size_t m = 0;
        while (strncmp(key, maps[m].prefix, strlen(maps[m].prefix)) != 0)
            m++;
        const char *name = key + strlen(maps[m].prefix);
        if (!*name) {
            bai_diag_add(diag, where, "%s: the name after the dot is missing", key);
            return -1;
        }
        if (maps[m].dir && !good_dir(v)) {
            bai_diag_add(diag, where, "%s: expected an absolute directory without \"..\", got \"%.80s\"", key, v);
            return -1;
        }
        rc = add_map((struct bai_kv **)((char *)s + maps[m].offset), (size_t *)((char *)s + maps[m].count), name, v);
        if (rc > 0) {
            bai_diag_add(diag, where, "%s: given twice", key);
            return -1;
        }
    } else if (strcmp(key, "settings_file") == 0) {
        if (!allow_file) {
            bai_diag_add(diag, where, "settings_file: not allowed here (settings files do not nest)");
            return -1;
        }
        return bai_settings_load_file(s, v, diag);
    } else {
        bai_diag_add(diag, where, "unknown setting \"%.60s\" (see the plugin's README for the keys)", key);
        return -1;
    }
done:
    if (rc < 0) {
        bai_diag_add(diag, where, "%s: out of memory", key);
        return -1;
    }
    return 0;
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

const char *bai_settings_environment_image(const struct bai_settings *s, const char *ref)
{
    return map_lookup(s->environments, s->n_environments, ref);
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

void bai_settings_free(struct bai_settings *s)
{
    free(s->shares_root); free(s->mount_root); free(s->job_root); free(s->image_root);
    free(s->partition); free(s->python); free(s->mpi);
    for (int i = 0; i < 3; i++)
        free(s->priority[i].qos);
    free_map(s->shares, s->n_shares);
    free_map(s->images, s->n_images);
    free_map(s->clusters, s->n_clusters);
    free_map(s->environments, s->n_environments);
    free_map(s->data, s->n_data);
    memset(s, 0, sizeof *s);
}
