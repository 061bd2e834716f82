/* Finding the plugin's plugstack line as Slurm does (see plugstack.h). */
#include "plugstack.h"

#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Slurm reads both files with fgets into a PATH_MAX buffer; nesting is bounded here against a loop. */
#define MAX_DEPTH 16
#define SEP " \t\r\n"

/* The directory of `file`, for relative includes; newly allocated. */
static char *dir_of(const char *file)
{
    char *copy = strdup(file);
    char *d = copy ? strdup(dirname(copy)) : NULL;
    free(copy);
    return d;
}

/* `name` relative to the directory of `file` unless absolute; newly allocated. */
static char *beside(const char *file, const char *name)
{
    char *d = name[0] == '/' ? NULL : dir_of(file), *out = NULL;
    if (name[0] == '/')
        return strdup(name);
    if (d && asprintf(&out, "%s%s%s", d, strcmp(d, "/") == 0 ? "" : "/", name) < 0)
        out = NULL;
    free(d);
    return out;
}

/* slurm.conf: the last PlugStackConfig=VALUE (keys are case-insensitive, several may share a line), following
 * `Include FILE` lines, a relative FILE being beside slurm.conf (`top`) at any depth, as get_extra_conf_path()
 * has it. *value is replaced (newly allocated). */
static void find_plugstack_config(const char *top, const char *conf, int depth, char **value)
{
    char line[PATH_MAX];
    FILE *f = depth < MAX_DEPTH ? fopen(conf, "re") : NULL;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#'), *save = NULL;
        if (hash)
            *hash = '\0';
        char *w = strtok_r(line, SEP, &save);
        if (w && strcasecmp(w, "include") == 0) {
            char *arg = strtok_r(NULL, SEP, &save), *inc = arg ? beside(top, arg) : NULL;
            if (inc)
                find_plugstack_config(top, inc, depth + 1, value);
            free(inc);
            continue;
        }
        for (; w; w = strtok_r(NULL, SEP, &save)) {
            static const char key[] = "PlugStackConfig=";
            if (strncasecmp(w, key, sizeof key - 1) == 0 && w[sizeof key - 1]) {
                /* s_p_parse_file takes a value in double quotes too. */
                const char *v = w + sizeof key - 1;
                size_t n = strlen(v);
                bool quoted = n >= 2 && v[0] == '"' && v[n - 1] == '"';
                free(*value);
                *value = quoted ? strndup(v + 1, n - 2) : strdup(v);
            }
        }
    }
    fclose(f);
}

struct found {
    char *where;   /* "FILE:LINE" */
    char **words;  /* the plugin's arguments */
    size_t n_words;
};

static bool is_plugin(const char *path)
{
    const char *slash = strrchr(path, '/');
    return strcmp(slash ? slash + 1 : path, BAI_PLUGIN_FILE) == 0;
}

/* Read one stack file; true once the plugin's line is found (into *fd). */
static bool scan_stack(const char *file, int depth, struct found *fd)
{
    char line[PATH_MAX];
    bool done = false;
    FILE *f = depth < MAX_DEPTH ? fopen(file, "re") : NULL;
    if (!f)
        return false;
    for (int lineno = 1; !done && fgets(line, sizeof line, f); lineno++) {
        char *hash = strchr(line, '#'), *save = NULL;
        if (hash)
            *hash = '\0';
        char *type = strtok_r(line, SEP, &save);
        char *path = type ? strtok_r(NULL, SEP, &save) : NULL;
        if (!path)
            continue;
        if (strcmp(type, "include") == 0) {
            char *pattern = beside(file, path);
            glob_t g;
            if (pattern && glob(pattern, 0, NULL, &g) == 0) {
                for (size_t i = 0; !done && i < g.gl_pathc; i++)
                    done = scan_stack(g.gl_pathv[i], depth + 1, fd);
                globfree(&g);
            }
            free(pattern);
            continue;
        }
        if ((strcmp(type, "required") != 0 && strcmp(type, "optional") != 0) || !is_plugin(path))
            continue;
        if (asprintf(&fd->where, "%s:%d", file, lineno) < 0)
            fd->where = NULL;
        for (char *w; (w = strtok_r(NULL, SEP, &save));) {
            char **nw = realloc(fd->words, (fd->n_words + 1) * sizeof *nw);
            if (!nw)
                break;
            fd->words = nw;
            fd->words[fd->n_words++] = strdup(w);
        }
        done = true;
    }
    fclose(f);
    return done;
}

int bai_site_from_slurm(struct bai_settings *site, char *origin, size_t size, struct bai_diag *diag)
{
    const char *conf = getenv("SLURM_CONF");
    char *stack = NULL;
    struct found fd = {0};
    size_t before = bai_diag_total(diag);

    if (!conf || !*conf)
        conf = BAI_SLURM_CONF;
    find_plugstack_config(conf, conf, 0, &stack);
    if (!stack)
        stack = beside(conf, "plugstack.conf");
    if (stack && scan_stack(stack, 0, &fd)) {
        const char *where = fd.where ? fd.where : stack;
        snprintf(origin, size, "the %s line of %s (slurm.conf: %s)", BAI_PLUGIN_FILE, where, conf);
        for (size_t i = 0; i < fd.n_words; i++)
            (void)bai_settings_apply(site, fd.words[i] ? fd.words[i] : "", where, true, diag);
    } else {
        snprintf(origin, size, "the defaults: no %s line in %s (slurm.conf: %s)", BAI_PLUGIN_FILE,
                 stack ? stack : "plugstack.conf", conf);
    }
    for (size_t i = 0; i < fd.n_words; i++)
        free(fd.words[i]);
    free(fd.words);
    free(fd.where);
    free(stack);
    return bai_diag_total(diag) > before ? -1 : 0;
}
