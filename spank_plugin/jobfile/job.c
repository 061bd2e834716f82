/* Parse and validate a Batch AI job file: see batchai_jobfile.h. The walk mirrors schemas/job.schema.json; where the
 * schema cannot say something (cross-field rules, share names derived from URLs), it is checked here. */
#include "batchai_jobfile.h"
#include "checks.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "azureml.h"
#include "jsonv.h"
#include "toolkits.h"
#include "yamltree.h"

/* ---- text-level checks, before any JSON parsing ---- */

static void line_col(const char *text, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static void fault_at(struct bai_diag *d, const char *path, const char *text, size_t off, const char *what)
{
    size_t line, col;

    line_col(text, off, &line, &col);
    bai_diag_add(d, path, "%s at line %zu, column %zu", what, line, col);
}

/* One open object or array while scanning the text. */
struct scan_level {
    bool object;
    bool fresh;         /* the next token starts an entry: after the opening bracket or a comma */
    bool want_key;      /* objects: the next string is a member name */
    size_t entries;     /* entries started; the current one is entries - 1 */
    const char *key;    /* objects: the current member's name, raw JSON text of key_len bytes */
    size_t key_len;
};

/* The JSON path of the current entry of each of the first n levels, e.g. properties.secrets[3]. */
static void scan_path(const struct scan_level *lv, int n, char *out)
{
    char next[JV_PATH_MAX], name[66];

    out[0] = '\0';
    for (int k = 0; k < n; k++) {
        if (lv[k].object) {
            /* A name longer than 64 bytes is shown cut, so its first 65 bytes decide how it is shown. */
            size_t len = lv[k].key_len < sizeof name - 1 ? lv[k].key_len : sizeof name - 1;
            memcpy(name, lv[k].key, len);
            name[len] = '\0';
            jv_child_quoted(next, out, name);
        } else {
            jv_item(next, out, lv[k].entries - 1);
        }
        memcpy(out, next, sizeof next);
    }
}

/* Bound what cJSON will build before it builds anything: nesting depth (cJSON's own limit is 1000), entries
 * of each object and array, and values in all (cJSON allocates each one, so this is what bounds its time).
 * Each fault names the JSON path, the limit and the line; the first one ends the scan. Also refuse "\u0000"
 * escapes, which would silently cut a C string short after parsing. Syntax is left to cJSON: on malformed
 * text the path shown may be odd, never the memory accessed. */
static bool check_structure(const char *text, size_t len, struct bai_diag *d)
{
    struct scan_level lv[BAI_JOB_MAX_DEPTH];
    char path[JV_PATH_MAX], what[96];
    const char *key = NULL; /* the member name being read */
    bool in_string = false;
    size_t values = 0;
    int depth = 0;

    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        struct scan_level *top = depth ? &lv[depth - 1] : NULL;
        if (in_string) {
            if (c == '\\' && len - i >= 6 && memcmp(text + i + 1, "u0000", 5) == 0) {
                scan_path(lv, key ? depth - 1 : depth, path);
                fault_at(d, path, text, i, "string contains an escaped NUL character (\\u0000)");
                return false;
            }
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_string = false;
                if (key) {
                    top->key = key;
                    top->key_len = (size_t)(text + i - key);
                    key = NULL;
                }
            }
            continue;
        }
        if ((unsigned char)c <= ' ' || c == ':') /* what cJSON skips as whitespace */
            continue;
        if (top && c == ',') {
            top->fresh = true;
            top->want_key = top->object;
            continue;
        }
        if (top && (c == '}' || c == ']')) {
            depth--;
            continue;
        }
        /* The first character of an entry (a value, or a member's name) counts it; the rest of a token does
         * not. */
        if (top ? top->fresh : values == 0) {
            if (top && top->entries++ == BAI_JOB_MAX_ITEMS) {
                scan_path(lv, depth - 1, path);
                snprintf(what, sizeof what, "more %s than the limit of %d in one %s",
                         top->object ? "members" : "entries", BAI_JOB_MAX_ITEMS, top->object ? "object" : "array");
                fault_at(d, path, text, i, what);
                return false;
            }
            if (values++ == BAI_JOB_MAX_VALUES) {
                scan_path(lv, depth - 1, path);
                snprintf(what, sizeof what, "more values than the limit of %d in one file", BAI_JOB_MAX_VALUES);
                fault_at(d, path, text, i, what);
                return false;
            }
            if (top)
                top->fresh = false;
        }
        if (c == '"') {
            in_string = true;
            if (top && top->want_key) {
                top->want_key = false;
                key = text + i + 1;
            }
        } else if (c == '{' || c == '[') {
            if (depth == BAI_JOB_MAX_DEPTH) {
                scan_path(lv, depth, path);
                snprintf(what, sizeof what, "nesting deeper than %d levels", BAI_JOB_MAX_DEPTH);
                fault_at(d, path, text, i, what);
                return false;
            }
            lv[depth++] = (struct scan_level){ .object = c == '{', .fresh = true, .want_key = c == '{', .key = "" };
        }
    }
    return true;
}

/* The text's own faults, whatever its format: empty, too large, a NUL byte. Returns the offset of its first
 * character that is not white space, or -1. */
static long check_text(const char *text, size_t len, struct bai_diag *d)
{
    const char *nul;
    size_t line, col, i;

    for (i = 0; i < len && isspace((unsigned char)text[i]); i++)
        ;
    if (i == len) {
        bai_diag_add(d, "", "the file is empty: expected a JSON object or a YAML mapping");
        return -1;
    }
    if (len > BAI_JOB_MAX_BYTES) {
        bai_diag_add(d, "", "the file is %zu bytes, larger than the limit of %d", len, BAI_JOB_MAX_BYTES);
        return -1;
    }
    nul = memchr(text, '\0', len);
    if (nul) {
        line_col(text, (size_t)(nul - text), &line, &col);
        bai_diag_add(d, "", "NUL byte at line %zu, column %zu: a job file is text", line, col);
        return -1;
    }
    return (long)i;
}

/* JSON when the text starts with '{' (every job.json) or '[', else YAML (an Azure ML command job). */
static cJSON *parse_text(const char *text, size_t len, struct bai_diag *d)
{
    const char *end = NULL;
    size_t line, col;
    long first = check_text(text, len, d);
    cJSON *root;

    if (first < 0)
        return NULL;
    if (text[first] != '{' && text[first] != '[')
        return bai_yaml_tree(text, len, d);
    if (!check_structure(text, len, d))
        return NULL;
    root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t off = (at && at >= text && at <= text + len) ? (size_t)(at - text) : len;
        line_col(text, off, &line, &col);
        if (off >= len)
            bai_diag_add(d, "", "not valid JSON: the text ends early (truncated?) at line %zu", line);
        else
            bai_diag_add(d, "", "not valid JSON: syntax error at line %zu, column %zu", line, col);
        return NULL;
    }
    for (; end && end < text + len; end++)
        if (!isspace((unsigned char)*end)) {
            line_col(text, (size_t)(end - text), &line, &col);
            bai_diag_add(d, "", "not valid JSON: unexpected text after the document at line %zu, column %zu",
                         line, col);
            cJSON_Delete(root);
            return NULL;
        }
    return root;
}

/* ---- value checks shared by several fields ---- */

static bool is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* A path relative to a mount root: segments of [A-Za-z0-9._@+-], none empty, "." or "..". */
static void check_relative(struct bai_diag *d, const char *path, const char *s)
{
    const char *seg = s;

    if (*s == '/') {
        bai_diag_add(d, path, "expected a relative path, got an absolute one");
        return;
    }
    for (const char *p = s;; p++) {
        if (*p == '/' || *p == '\0') {
            size_t n = (size_t)(p - seg);
            if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
                bai_diag_add(d, path, "expected a relative path without empty, \".\" or \"..\" segments");
                return;
            }
            if (*p == '\0')
                return;
            seg = p + 1;
        } else if (!is_name_char(*p) && !strchr(".-@+", *p)) {
            bai_diag_add(d, path, "character '%c' is not allowed in a mount path (letters, digits, . _ - @ +)",
                         isprint((unsigned char)*p) ? *p : '?');
            return;
        }
    }
}

static void check_identifier(struct bai_diag *d, const char *path, const char *s, bool leading_digit_ok)
{
    bool ok = *s != '\0' && (leading_digit_ok || !isdigit((unsigned char)*s));

    for (const char *p = s; ok && *p; p++)
        ok = is_name_char(*p);
    if (!ok)
        bai_diag_add(d, path, "expected a name of letters, digits and '_'%s",
                     leading_digit_ok ? "" : " not starting with a digit");
}

/* Paths the system must resolve (log prefix, input and output directories): absolute, or under one of the
 * mount-root variables, since nothing else has a value before the job runs. */
static void check_batchai_path(struct bai_diag *d, const char *path, const char *s)
{
    static const char *const roots[] = { "$AZ_BATCHAI_JOB_MOUNT_ROOT", "${AZ_BATCHAI_JOB_MOUNT_ROOT}",
                                         "$AZ_BATCHAI_MOUNT_ROOT", "${AZ_BATCHAI_MOUNT_ROOT}", NULL };

    if (s[0] == '/')
        return;
    for (size_t i = 0; roots[i]; i++) {
        size_t n = strlen(roots[i]);
        if (strncmp(s, roots[i], n) == 0 && (s[n] == '/' || s[n] == '\0'))
            return;
    }
    bai_diag_add(d, path, "expected an absolute path or one starting with $AZ_BATCHAI_JOB_MOUNT_ROOT/ or "
                 "$AZ_BATCHAI_MOUNT_ROOT/, got \"%.60s\"", s);
}

static char *last_segment(const char *s)
{
    size_t len = strlen(s);
    const char *end, *start;

    while (len && s[len - 1] == '/')
        len--;
    end = s + len;
    for (start = end; start > s && start[-1] != '/'; start--)
        ;
    return strndup(start, (size_t)(end - start));
}

/* ---- sub-objects ---- */

static void parse_keyvault_ref(struct bai_diag *d, const cJSON *v, const char *path)
{
    static const char *const keys[] = { "sourceVault", "secretUrl", NULL };
    static const char *const vault_keys[] = { "id", NULL };
    char child[JV_PATH_MAX];

    if (!jv_object(d, v, path, keys))
        return;
    jv_string(d, v, "secretUrl", path, JV_REQUIRED | JV_NONEMPTY, NULL);
    jv_child(child, path, "sourceVault");
    if (!jv_get(v, "sourceVault"))
        bai_diag_add(d, child, "missing: expected an object with an id");
    else if (jv_object(d, jv_get(v, "sourceVault"), child, vault_keys))
        jv_string(d, jv_get(v, "sourceVault"), "id", child, JV_REQUIRED | JV_NONEMPTY, NULL);
}

/* Storage credentials are accepted for compatibility and never kept: a Slurm site needs none. */
static void parse_storage_credentials(struct bai_diag *d, const cJSON *obj, const char *path)
{
    static const char *const keys[] = { "accountKey", "accountKeySecretReference", NULL };
    const cJSON *v = jv_get(obj, "credentials");
    char child[JV_PATH_MAX], ref[JV_PATH_MAX];

    if (!v)
        return;
    jv_child(child, path, "credentials");
    if (!jv_object(d, v, child, keys))
        return;
    jv_string(d, v, "accountKey", child, 0, NULL);
    jv_child(ref, child, "accountKeySecretReference");
    if (jv_get(v, "accountKeySecretReference"))
        parse_keyvault_ref(d, jv_get(v, "accountKeySecretReference"), ref);
}

static void check_mode(struct bai_diag *d, const char *path, const char *s)
{
    size_t n = strlen(s);
    bool ok = n >= 3 && n <= 4;

    for (size_t i = 0; ok && i < n; i++)
        ok = s[i] >= '0' && s[i] <= '7';
    if (!ok)
        bai_diag_add(d, path, "expected an octal mode such as \"0777\"");
}

/* The share name of an Azure file share URL: https://<account>.file.core.windows.net/<share>[/...] */
static char *share_from_url(struct bai_diag *d, const char *path, const char *url)
{
    const char *host, *slash, *end;

    if (strncmp(url, "https://", 8) == 0)
        host = url + 8;
    else if (strncmp(url, "http://", 7) == 0)
        host = url + 7;
    else {
        bai_diag_add(d, path, "expected an https:// URL of an Azure file share");
        return NULL;
    }
    slash = strchr(host, '/');
    if (!slash || slash == host || slash[1] == '\0' || slash[1] == '/') {
        bai_diag_add(d, path, "expected a URL of the form https://<account>.file.core.windows.net/<share>");
        return NULL;
    }
    end = strchr(slash + 1, '/');
    return strndup(slash + 1, end ? (size_t)(end - slash - 1) : strlen(slash + 1));
}

static void check_share_name(struct bai_diag *d, const char *path, const char *name)
{
    bool ok = *name && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;

    for (const char *p = name; ok && *p; p++)
        ok = is_name_char(*p) || *p == '-' || *p == '.';
    if (!ok)
        bai_diag_add(d, path, "share name \"%.64s\" must be letters, digits, '-', '_' or '.'", name);
}

const char *const bai_mount_kind_names[] = { "azureFileShares", "azureBlobFileSystems", "fileServers",
                                             "unmanagedFileSystems", NULL };
const char *const bai_priority_names[] = { "normal", "low", "high", NULL };

/* paths: the relativeMountPath of every mount before this one. */
static void parse_one_mount(struct bai_diag *d, const cJSON *v, const char *path, enum bai_mount_kind g,
                            struct jv_names *paths, struct bai_mount *m)
{
    static const char *const afs_keys[] = { "accountName", "azureFileUrl", "credentials", "relativeMountPath",
                                            "fileMode", "directoryMode", NULL };
    static const char *const blob_keys[] = { "accountName", "containerName", "credentials", "relativeMountPath",
                                             "mountOptions", NULL };
    static const char *const fs_keys[] = { "fileServer", "sourceDirectory", "relativeMountPath", "mountOptions",
                                           NULL };
    static const char *const um_keys[] = { "mountCommand", "relativeMountPath", NULL };
    static const char *const *const keys[] = { afs_keys, blob_keys, fs_keys, um_keys };
    static const char *const id_keys[] = { "id", NULL };
    char child[JV_PATH_MAX];

    if (!jv_object(d, v, path, keys[g]))
        return;
    m->kind = (enum bai_mount_kind)g;
    jv_child(child, path, "relativeMountPath");
    if (jv_string(d, v, "relativeMountPath", path, JV_REQUIRED | JV_NONEMPTY, &m->relative_path) == 1) {
        check_relative(d, child, m->relative_path);
        /* Two mounts at one place would hide each other. */
        if (jv_seen(d, child, paths, m->relative_path))
            bai_diag_add(d, child, "another mount already uses \"%.64s\"", m->relative_path);
    }
    switch (g) {
    case BAI_MOUNT_AZURE_FILE_SHARE:
        jv_string(d, v, "accountName", path, 0, NULL);
        parse_storage_credentials(d, v, path);
        jv_child(child, path, "azureFileUrl");
        if (jv_string(d, v, "azureFileUrl", path, JV_REQUIRED | JV_NONEMPTY, &m->source) == 1) {
            m->share = share_from_url(d, child, m->source);
            if (m->share)
                check_share_name(d, child, m->share);
        }
        jv_child(child, path, "fileMode");
        if (jv_string(d, v, "fileMode", path, 0, &m->file_mode) == 1)
            check_mode(d, child, m->file_mode);
        jv_child(child, path, "directoryMode");
        if (jv_string(d, v, "directoryMode", path, 0, &m->dir_mode) == 1)
            check_mode(d, child, m->dir_mode);
        break;
    case BAI_MOUNT_AZURE_BLOB:
        jv_string(d, v, "accountName", path, 0, NULL);
        parse_storage_credentials(d, v, path);
        jv_child(child, path, "containerName");
        if (jv_string(d, v, "containerName", path, JV_REQUIRED | JV_NONEMPTY, &m->share) == 1) {
            check_share_name(d, child, m->share);
            m->source = strdup(m->share);
        }
        jv_string(d, v, "mountOptions", path, 0, &m->mount_options);
        break;
    case BAI_MOUNT_FILE_SERVER:
        jv_child(child, path, "fileServer");
        if (!jv_get(v, "fileServer")) {
            bai_diag_add(d, child, "missing: expected an object with an id");
        } else if (jv_object(d, jv_get(v, "fileServer"), child, id_keys) &&
                   jv_string(d, jv_get(v, "fileServer"), "id", child, JV_REQUIRED | JV_NONEMPTY, &m->source) == 1) {
            char id_path[JV_PATH_MAX];
            m->share = last_segment(m->source);
            jv_child(id_path, child, "id");
            if (m->share)
                check_share_name(d, id_path, m->share);
        }
        jv_child(child, path, "sourceDirectory");
        if (jv_string(d, v, "sourceDirectory", path, JV_NONEMPTY, &m->source_dir) == 1)
            check_relative(d, child, m->source_dir[0] == '/' ? m->source_dir + 1 : m->source_dir);
        jv_string(d, v, "mountOptions", path, 0, &m->mount_options);
        break;
    case BAI_MOUNT_UNMANAGED:
        jv_string(d, v, "mountCommand", path, JV_REQUIRED | JV_NONEMPTY, &m->source);
        break;
    }
}

static void parse_mounts(struct bai_diag *d, const cJSON *v, const char *path, struct bai_job *job)
{
    const cJSON *arr[4];
    struct jv_names paths = { 0 };
    size_t total = 0;
    char child[JV_PATH_MAX], item[JV_PATH_MAX];

    if (!jv_object(d, v, path, bai_mount_kind_names))
        return;
    for (int g = 0; g < 4; g++) {
        jv_array(d, v, bai_mount_kind_names[g], path, &arr[g]);
        total += arr[g] ? (size_t)cJSON_GetArraySize(arr[g]) : 0;
    }
    job->mounts = calloc(total ? total : 1, sizeof *job->mounts);
    if (!job->mounts) {
        bai_diag_add(d, path, "out of memory");
        return;
    }
    for (int g = 0; g < 4; g++) {
        size_t i = 0;
        const cJSON *e;
        jv_child(child, path, bai_mount_kind_names[g]);
        cJSON_ArrayForEach(e, arr[g]) {
            jv_item(item, child, i++);
            parse_one_mount(d, e, item, (enum bai_mount_kind)g, &paths, &job->mounts[job->n_mounts++]);
        }
    }
    jv_names_free(&paths);
}

static void parse_container(struct bai_diag *d, const cJSON *v, const char *path, struct bai_job *job)
{
    static const char *const keys[] = { "imageSourceRegistry", "shmSize", NULL };
    static const char *const reg_keys[] = { "serverUrl", "image", "credentials", NULL };
    static const char *const cred_keys[] = { "username", "password", "passwordSecretReference", NULL };
    const cJSON *reg, *cred;
    char rpath[JV_PATH_MAX], cpath[JV_PATH_MAX], ref[JV_PATH_MAX], child[JV_PATH_MAX];

    if (!jv_object(d, v, path, keys))
        return;
    jv_string(d, v, "shmSize", path, JV_NONEMPTY, &job->shm_size);
    reg = jv_get(v, "imageSourceRegistry");
    jv_child(rpath, path, "imageSourceRegistry");
    if (!reg) {
        bai_diag_add(d, rpath, "missing: expected an object with an image");
        return;
    }
    if (!jv_object(d, reg, rpath, reg_keys))
        return;
    jv_child(child, rpath, "image");
    if (jv_string(d, reg, "image", rpath, JV_REQUIRED | JV_NONEMPTY, &job->image) == 1)
        bai_check_image(d, child, jv_get(reg, "image"), "an image reference (expected [registry/]name[:tag][@digest])");
    jv_child(child, rpath, "serverUrl");
    if (jv_string(d, reg, "serverUrl", rpath, JV_NONEMPTY, &job->registry_server) == 1)
        bai_check_registry(d, child, jv_get(reg, "serverUrl"));
    cred = jv_get(reg, "credentials");
    jv_child(cpath, rpath, "credentials");
    if (cred && jv_object(d, cred, cpath, cred_keys)) {
        /* Accepted and dropped: images are staged by the site, never pulled with the user's password. */
        jv_string(d, cred, "username", cpath, JV_REQUIRED | JV_NONEMPTY, NULL);
        jv_string(d, cred, "password", cpath, 0, NULL);
        jv_child(ref, cpath, "passwordSecretReference");
        if (jv_get(cred, "passwordSecretReference"))
            parse_keyvault_ref(d, jv_get(cred, "passwordSecretReference"), ref);
    }
}

/* ---- toolkits ---- */

/* The object of the toolkit `kind`: each key as its row says (toolkits.h), into t->value, then the row's rules. */
static void parse_toolkit(struct bai_diag *d, const cJSON *v, const char *path, const struct bai_toolkit *kind,
                          struct bai_job *job)
{
    struct bai_toolkit_settings *t = &job->toolkit;
    const char *known[BAI_TOOLKIT_MAX_KEYS + 1];
    size_t n = 0;

    t->kind = kind;
    for (; n < BAI_TOOLKIT_MAX_KEYS && kind->keys[n].name; n++)
        known[n] = kind->keys[n].name;
    known[n] = NULL;
    if (!jv_object(d, v, path, known))
        return;
    for (size_t i = 0; i < n; i++) {
        const struct bai_toolkit_key *k = &kind->keys[i];
        unsigned flags = k->required ? JV_REQUIRED : 0u;
        if (k->value == BAI_TK_INT) {
            jv_int(d, v, k->name, path, 1, BAI_JOB_MAX_NODES * 64L, flags, &t->value[i].count);
            continue;
        }
        char **value = &t->value[i].str;
        flags |= k->value == BAI_TK_TEXT ? JV_MULTILINE : JV_NONEMPTY;
        if (jv_string(d, v, k->name, path, flags, value) == 1 && k->value == BAI_TK_PATH &&
            !bai_shell_path_ok(*value)) {
            char child[JV_PATH_MAX], got[96];
            jv_child(child, path, k->name);
            jv_describe(jv_get(v, k->name), got, sizeof got);
            bai_diag_add(d, child, "expected a path whose only shell syntax is $NAME or ${NAME} (no other $, "
                         "no \" \\ or `), got %s", got);
        }
    }
    if (kind->rules)
        kind->rules(d, path, job);
}

/* ---- lists of small objects ---- */

static void parse_dirs(struct bai_diag *d, const cJSON *obj, const char *path, bool output, struct bai_dir **out,
                       size_t *n_out)
{
    static const char *const in_keys[] = { "id", "path", NULL };
    static const char *const out_keys[] = { "id", "pathPrefix", "pathSuffix", NULL };
    const char *key = output ? "outputDirectories" : "inputDirectories";
    const cJSON *arr, *e;
    struct jv_names ids = { 0 };
    char apath[JV_PATH_MAX], item[JV_PATH_MAX], child[JV_PATH_MAX];
    size_t i = 0;

    if (jv_array(d, obj, key, path, &arr) != 1)
        return;
    jv_child(apath, path, key);
    *out = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof **out);
    if (!*out) {
        bai_diag_add(d, apath, "out of memory");
        return;
    }
    cJSON_ArrayForEach(e, arr) {
        struct bai_dir *dir = &(*out)[(*n_out)++];
        jv_item(item, apath, i++);
        if (!jv_object(d, e, item, output ? out_keys : in_keys))
            continue;
        jv_child(child, item, "id");
        if (jv_string(d, e, "id", item, JV_REQUIRED | JV_NONEMPTY, &dir->id) == 1) {
            check_identifier(d, child, dir->id, true);
            if (jv_seen(d, child, &ids, dir->id))
                bai_diag_add(d, child, "duplicate id \"%.64s\"", dir->id);
        }
        jv_child(child, item, output ? "pathPrefix" : "path");
        if (jv_string(d, e, output ? "pathPrefix" : "path", item, JV_REQUIRED | JV_NONEMPTY, &dir->path) == 1)
            check_batchai_path(d, child, dir->path);
        if (output) {
            jv_child(child, item, "pathSuffix");
            if (jv_string(d, e, "pathSuffix", item, JV_NONEMPTY, &dir->suffix) == 1)
                check_relative(d, child, dir->suffix);
        }
    }
    jv_names_free(&ids);
}

static void parse_env(struct bai_diag *d, const cJSON *obj, const char *path, struct bai_job *job)
{
    static const char *const env_keys[] = { "name", "value", NULL };
    static const char *const secret_keys[] = { "name", "value", "valueSecretReference", NULL };
    const cJSON *arrs[2], *e;
    struct jv_names names = { 0 };
    char apath[JV_PATH_MAX], item[JV_PATH_MAX], child[JV_PATH_MAX];
    size_t total = 0;

    jv_array(d, obj, "environmentVariables", path, &arrs[0]);
    jv_array(d, obj, "secrets", path, &arrs[1]);
    for (int k = 0; k < 2; k++)
        total += arrs[k] ? (size_t)cJSON_GetArraySize(arrs[k]) : 0;
    job->env = calloc(total + 1, sizeof *job->env);
    if (!job->env) {
        bai_diag_add(d, path, "out of memory");
        return;
    }
    for (int k = 0; k < 2; k++) {
        bool secret = k == 1;
        size_t i = 0;
        jv_child(apath, path, secret ? "secrets" : "environmentVariables");
        cJSON_ArrayForEach(e, arrs[k]) {
            struct bai_env *env = &job->env[job->n_env++];
            env->secret = secret;
            jv_item(item, apath, i++);
            if (!jv_object(d, e, item, secret ? secret_keys : env_keys))
                continue;
            jv_child(child, item, "name");
            if (jv_string(d, e, "name", item, JV_REQUIRED | JV_NONEMPTY, &env->name) == 1) {
                check_identifier(d, child, env->name, false);
                if (strncmp(env->name, "AZ_BATCHAI_", 11) == 0 || strncmp(env->name, "SLURM_", 6) == 0)
                    bai_diag_add(d, child, "names starting with AZ_BATCHAI_ or SLURM_ are set by the system");
                if (jv_seen(d, child, &names, env->name))
                    bai_diag_add(d, child, "variable \"%.64s\" is defined twice", env->name);
            }
            jv_child(child, item, "valueSecretReference");
            if (!secret) {
                jv_string(d, e, "value", item, JV_REQUIRED | JV_MULTILINE, &env->value);
            } else if (jv_get(e, "valueSecretReference")) {
                if (jv_get(e, "value"))
                    bai_diag_add(d, item, "expected exactly one of value and valueSecretReference");
                parse_keyvault_ref(d, jv_get(e, "valueSecretReference"), child);
            } else if (jv_string(d, e, "value", item, JV_MULTILINE | JV_SECRET, &env->value) == 0) {
                bai_diag_add(d, item, "expected exactly one of value and valueSecretReference");
            }
        }
    }
    jv_names_free(&names);
}

/* ---- the job ---- */

/* The job's own properties; the toolkits' are the table's (toolkits.h). */
static const char *const job_keys[] = {
    "schedulingPriority", "cluster", "mountVolumes", "nodeCount", "containerSettings", "jobPreparation",
    "stdOutErrPathPrefix", "inputDirectories", "outputDirectories", "environmentVariables", "secrets",
    "constraints", BAI_CHECKPOINTABLE_KEY, NULL,
};

/* jv_object over the job's properties and the toolkits'. */
static bool job_object(struct bai_diag *d, const cJSON *v, const char *path)
{
    const char *known[sizeof job_keys / sizeof job_keys[0] + BAI_TOOLKIT_MAX];
    size_t n = 0;
    for (; job_keys[n]; n++)
        known[n] = job_keys[n];
    for (size_t k = 0; k < bai_toolkit_count && k < BAI_TOOLKIT_MAX; k++)
        known[n++] = bai_toolkits[k].property;
    known[n] = NULL;
    return jv_object(d, v, path, known);
}

static void parse_job(struct bai_diag *d, const cJSON *v, const char *path, struct bai_job *job)
{
    static const char *const cluster_keys[] = { "id", NULL };
    static const char *const prep_keys[] = { "commandLine", NULL };
    static const char *const constraint_keys[] = { "maxWallClockTime", NULL };
    char child[JV_PATH_MAX];
    char *s = NULL;
    int found = 0;

    job->max_wall_seconds = BAI_JOB_DEFAULT_WALL_SECONDS;
    jv_int(d, v, "nodeCount", path, 1, BAI_JOB_MAX_NODES, JV_REQUIRED, &job->node_count);
    jv_child(child, path, "stdOutErrPathPrefix");
    if (jv_string(d, v, "stdOutErrPathPrefix", path, JV_REQUIRED | JV_NONEMPTY, &job->std_out_err_prefix) == 1)
        check_batchai_path(d, child, job->std_out_err_prefix);

    jv_child(child, path, "schedulingPriority");
    if (jv_string(d, v, "schedulingPriority", path, 0, &s) == 1) {
        size_t i;
        for (i = 0; bai_priority_names[i] && strcmp(bai_priority_names[i], s) != 0; i++)
            ;
        if (bai_priority_names[i]) {
            job->priority = (enum bai_priority)i;
            job->priority_given = true;
        } else {
            bai_diag_add(d, child, "expected one of \"low\", \"normal\", \"high\"");
        }
        free(s);
    }
    jv_child(child, path, "cluster");
    if (jv_get(v, "cluster") && jv_object(d, jv_get(v, "cluster"), child, cluster_keys))
        jv_string(d, jv_get(v, "cluster"), "id", child, JV_REQUIRED | JV_NONEMPTY, &job->cluster_id);

    jv_child(child, path, "mountVolumes");
    if (jv_get(v, "mountVolumes"))
        parse_mounts(d, jv_get(v, "mountVolumes"), child, job);
    jv_child(child, path, "containerSettings");
    if (jv_get(v, "containerSettings"))
        parse_container(d, jv_get(v, "containerSettings"), child, job);
    jv_child(child, path, "jobPreparation");
    if (jv_get(v, "jobPreparation") && jv_object(d, jv_get(v, "jobPreparation"), child, prep_keys))
        jv_string(d, jv_get(v, "jobPreparation"), "commandLine", child, JV_REQUIRED | JV_NONEMPTY | JV_MULTILINE,
                  &job->prep_command);
    jv_child(child, path, "constraints");
    if (jv_get(v, "constraints") && jv_object(d, jv_get(v, "constraints"), child, constraint_keys)) {
        char wall[JV_PATH_MAX];
        jv_child(wall, child, "maxWallClockTime");
        if (jv_string(d, jv_get(v, "constraints"), "maxWallClockTime", child, 0, &s) == 1) {
            job->max_wall_seconds = bai_parse_duration(s);
            if (job->max_wall_seconds < 0)
                bai_diag_add(d, wall, "expected a duration \"d.hh:mm:ss\" or \"hh:mm:ss\" (at most %d days), "
                             "got \"%.40s\"", BAI_JOB_MAX_DAYS, s);
            free(s);
        }
    }
    jv_bool(d, v, BAI_CHECKPOINTABLE_KEY, path, 0, &job->checkpointable);
    parse_dirs(d, v, path, false, &job->inputs, &job->n_inputs);
    parse_dirs(d, v, path, true, &job->outputs, &job->n_outputs);
    parse_env(d, v, path, job);

    for (size_t k = 0; k < bai_toolkit_count; k++) {
        const struct bai_toolkit *tk = &bai_toolkits[k];
        const cJSON *t = jv_get(v, tk->property);
        if (!t)
            continue;
        if (found++) {
            bai_diag_add(d, path, "expected exactly one toolkit setting, got both %s and %s",
                         job->toolkit.kind->property, tk->property);
            continue;
        }
        jv_child(child, path, tk->property);
        parse_toolkit(d, t, child, tk, job);
    }
    if (!found) {
        char names[1024] = "";
        for (size_t k = 0, n = 0; k < bai_toolkit_count; k++)
            n += (size_t)snprintf(names + n, n < sizeof names ? sizeof names - n : 0, "%s%s",
                                  k == 0 ? "" : k + 1 == bai_toolkit_count ? " or " : ", ", bai_toolkits[k].property);
        bai_diag_add(d, path, "expected exactly one toolkit setting (%s), got none", names);
    }
}

int bai_job_parse(const char *text, size_t len, struct bai_job *job, struct bai_diag *diag)
{
    static const char *const wrapper_keys[] = { "$schema", "properties", NULL };
    size_t before = bai_diag_total(diag);
    const cJSON *body;
    const char *path;
    cJSON *root;

    memset(job, 0, sizeof *job);
    root = parse_text(text, len, diag);
    if (!root)
        return -1;
    if (jv_expect_object(diag, root, "", "a JSON object (a Batch AI job)")) {
        /* "$schema" is ignored, but held to the bounds of every string. */
        jv_string(diag, root, "$schema", "", 0, NULL);
        body = jv_get(root, "properties");
        path = "properties";
        if (body) {
            jv_object(diag, root, "", wrapper_keys);
        } else {
            /* The bare form: the job's properties at the top, "$schema" allowed beside them. */
            cJSON_Delete(cJSON_DetachItemFromObjectCaseSensitive(root, "$schema"));
            body = root;
            path = "";
        }
        const cJSON *type = jv_get(root, "type");
        if (!jv_get(root, "properties") && (jv_get(root, "command") || (cJSON_IsString(type) &&
            (strcmp(type->valuestring, "pipeline") == 0 || strcmp(type->valuestring, "sweep") == 0))))
            bai_aml_parse(root, job, diag); /* an Azure ML command job */
        else if (job_object(diag, body, path))
            parse_job(diag, body, path, job);
    }
    cJSON_Delete(root);
    if (bai_diag_total(diag) > before) {
        bai_job_free(job);
        return -1;
    }
    return 0;
}

int bai_job_read(const char *path, char **text_out, size_t *len_out, struct bai_diag *diag)
{
    struct stat st;
    char *text = NULL;
    size_t got = 0;
    int fd, rc = -1;

    /* O_NONBLOCK: a FIFO put in the file's place must not stall the reader (it is refused below). */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        bai_diag_add(diag, "", "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        bai_diag_add(diag, "", "%s is not a regular file", path);
        goto out;
    }
    if (st.st_size > BAI_JOB_MAX_BYTES) {
        bai_diag_add(diag, "", "the file is %lld bytes, larger than the limit of %d", (long long)st.st_size,
                     BAI_JOB_MAX_BYTES);
        goto out;
    }
    text = malloc((size_t)st.st_size + 1);
    if (!text) {
        bai_diag_add(diag, "", "out of memory reading %s", path);
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            bai_diag_add(diag, "", "cannot read %s: %s", path, n < 0 ? strerror(errno) : "file shrank");
            goto out;
        }
        got += (size_t)n;
    }
    text[got] = '\0';
    *text_out = text;
    *len_out = got;
    text = NULL;
    rc = 0;
out:
    free(text);
    close(fd);
    return rc;
}

int bai_job_task_count(const struct bai_job *job)
{
    const struct bai_toolkit_settings *t = &job->toolkit;

    if (job->aml)
        return bai_aml_task_count(job);
    if (bai_toolkit_int(t, "processCount") > 0)
        return bai_toolkit_int(t, "processCount");
    return t->kind->task_count ? t->kind->task_count(job) : job->node_count;
}

static void free_toolkit(struct bai_toolkit_settings *t)
{
    for (size_t i = 0; t->kind && i < BAI_TOOLKIT_MAX_KEYS && t->kind->keys[i].name; i++)
        if (t->kind->keys[i].value != BAI_TK_INT)
            free(t->value[i].str);
}

void bai_job_free(struct bai_job *job)
{
    for (size_t i = 0; i < job->n_mounts; i++) {
        struct bai_mount *m = &job->mounts[i];
        free(m->share); free(m->source); free(m->source_dir); free(m->relative_path);
        free(m->mount_options); free(m->file_mode); free(m->dir_mode); free(m->where);
    }
    for (size_t i = 0; i < job->n_inputs; i++) {
        free(job->inputs[i].id); free(job->inputs[i].path); free(job->inputs[i].suffix);
    }
    for (size_t i = 0; i < job->n_outputs; i++) {
        free(job->outputs[i].id); free(job->outputs[i].path); free(job->outputs[i].suffix);
    }
    for (size_t i = 0; i < job->n_env; i++) {
        if (job->env[i].value && job->env[i].secret)
            explicit_bzero(job->env[i].value, strlen(job->env[i].value));
        free(job->env[i].name); free(job->env[i].value);
    }
    free(job->mounts); free(job->inputs); free(job->outputs); free(job->env);
    free(job->cluster_id); free(job->std_out_err_prefix); free(job->prep_command);
    free(job->image); free(job->registry_server); free(job->shm_size);
    free_toolkit(&job->toolkit);
    bai_aml_free(job->aml);
    memset(job, 0, sizeof *job);
}
