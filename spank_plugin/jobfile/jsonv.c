/* Validating accessors over cJSON: see jsonv.h. */
#include "jsonv.h"

#include <ctype.h>
#include <math.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"

void jv_child(char *out, const char *parent, const char *key)
{
    /* Bounded, so that snprintf does not read all of a name of 1 MiB only to cut it. */
    int n = (int)strnlen(key, JV_PATH_MAX);

    if (parent && *parent)
        snprintf(out, JV_PATH_MAX, "%s.%.*s", parent, n, key);
    else
        snprintf(out, JV_PATH_MAX, "%.*s", n, key);
}

void jv_item(char *out, const char *parent, size_t index)
{
    snprintf(out, JV_PATH_MAX, "%s[%zu]", parent, index);
}

/* Quote a string for a message: printable ASCII kept, the rest escaped, cut after 40 characters. */
static void quote(const char *s, char *out, size_t size)
{
    size_t o = 0, shown = 0;

    if (size < 8)
        return;
    out[o++] = '"';
    for (; *s && o + 8 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (shown == 40) {
            o += (size_t)snprintf(out + o, size - o, "...");
            break;
        }
        if (c == '"' || c == '\\')
            o += (size_t)snprintf(out + o, size - o, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
        shown++;
    }
    out[o++] = '"';
    out[o] = '\0';
}

static bool plain_name(const char *s)
{
    bool plain = s[0] && strnlen(s, 65) <= 64;

    for (const char *p = s; plain && *p; p++)
        plain = isalnum((unsigned char)*p) || *p == '_' || *p == '$' || *p == '-';
    return plain;
}

void jv_child_quoted(char *out, const char *parent, const char *key)
{
    char shown[96];

    if (plain_name(key)) {
        jv_child(out, parent, key);
    } else {
        quote(key, shown, sizeof shown);
        jv_child(out, parent, shown);
    }
}

void jv_describe(const cJSON *v, char *out, size_t size)
{
    if (cJSON_IsString(v))
        quote(v->valuestring, out, size);
    else if (cJSON_IsNumber(v))
        snprintf(out, size, "%.17g", v->valuedouble);
    else if (cJSON_IsObject(v))
        snprintf(out, size, "an object");
    else if (cJSON_IsArray(v))
        snprintf(out, size, "an array");
    else if (cJSON_IsTrue(v))
        snprintf(out, size, "true");
    else if (cJSON_IsFalse(v))
        snprintf(out, size, "false");
    else
        snprintf(out, size, "null");
}

static void expected(struct bai_diag *d, const char *path, const char *what, const cJSON *v)
{
    char got[96];

    jv_describe(v, got, sizeof got);
    bai_diag_add(d, path, "expected %s, got %s", what, got);
}

bool jv_expect_object(struct bai_diag *d, const cJSON *v, const char *path, const char *what)
{
    if (cJSON_IsObject(v))
        return true;
    expected(d, path, what, v);
    return false;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

bool jv_seen(struct bai_diag *d, const char *path, struct jv_names *set, const char *name)
{
    const char *const *node = tsearch(name, &set->root, compare_names);

    if (!node) {
        bai_diag_add(d, path, "out of memory");
        return false;
    }
    return *node != name;
}

static void keep_name(void *name)
{
    (void)name; /* the set never owned it */
}

void jv_names_free(struct jv_names *set)
{
    tdestroy(set->root, keep_name);
    set->root = NULL;
}

bool jv_object(struct bai_diag *d, const cJSON *v, const char *path, const char *const known[])
{
    struct jv_names seen = { 0 };
    char child[JV_PATH_MAX], shown[96];

    if (!cJSON_IsObject(v)) {
        expected(d, path, "an object", v);
        return false;
    }
    for (const cJSON *m = v->child; m; m = m->next) {
        bool ok = false;
        for (size_t i = 0; known[i]; i++)
            ok = ok || strcmp(m->string, known[i]) == 0;
        jv_child(child, path, m->string);
        if (!ok) {
            /* Name the member by its path when its name is plain, else quote it safely. */
            if (plain_name(m->string)) {
                bai_diag_add(d, child, "unknown property");
            } else {
                quote(m->string, shown, sizeof shown);
                bai_diag_add(d, path, "unknown property %s", shown);
            }
            continue;
        }
        if (jv_seen(d, child, &seen, m->string))
            bai_diag_add(d, child, "duplicate property");
    }
    jv_names_free(&seen);
    return true;
}

const cJSON *jv_get(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

bool jv_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;

    while (p < end) {
        unsigned c = *p++;
        int more;
        unsigned min, cp;
        if (c < 0x80)
            continue;
        if ((c & 0xe0) == 0xc0) {
            more = 1; cp = c & 0x1f; min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            more = 2; cp = c & 0x0f; min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            more = 3; cp = c & 0x07; min = 0x10000;
        } else {
            return false;
        }
        if (end - p < more)
            return false;
        while (more--) {
            if ((*p & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (*p++ & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
    }
    return true;
}

int jv_string(struct bai_diag *d, const cJSON *obj, const char *key, const char *path, unsigned flags,
              char **out)
{
    char child[JV_PATH_MAX];
    const cJSON *v = jv_get(obj, key);
    size_t len;

    jv_child(child, path, key);
    if (!v) {
        if (flags & JV_REQUIRED) {
            bai_diag_add(d, child, "missing: expected a string");
            return -1;
        }
        return 0;
    }
    if (!cJSON_IsString(v)) {
        if (flags & JV_SECRET)
            bai_diag_add(d, child, "expected a string, got %s", cJSON_IsNumber(v) ? "a number" : "another type");
        else
            expected(d, child, "a string", v);
        return -1;
    }
    len = strlen(v->valuestring);
    if (len > BAI_JOB_MAX_STRING) {
        bai_diag_add(d, child, "string of %zu bytes is longer than the limit of %d", len, BAI_JOB_MAX_STRING);
        return -1;
    }
    if ((flags & JV_NONEMPTY) && len == 0) {
        bai_diag_add(d, child, "expected a non-empty string");
        return -1;
    }
    if (!jv_utf8_valid(v->valuestring, len)) {
        bai_diag_add(d, child, "string is not valid UTF-8");
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v->valuestring[i];
        bool allowed = (flags & JV_MULTILINE) && (c == '\t' || c == '\n');
        if ((c < 0x20 || c == 0x7f) && !allowed) {
            bai_diag_add(d, child, "string contains control character 0x%02x at offset %zu", c, i);
            return -1;
        }
    }
    if (out) {
        *out = strdup(v->valuestring);
        if (!*out) {
            bai_diag_add(d, child, "out of memory");
            return -1;
        }
    }
    return 1;
}

int jv_int(struct bai_diag *d, const cJSON *obj, const char *key, const char *path, long min, long max,
           unsigned flags, int *out)
{
    char child[JV_PATH_MAX], what[80];
    const cJSON *v = jv_get(obj, key);
    double x;

    jv_child(child, path, key);
    snprintf(what, sizeof what, "an integer >= %ld", min);
    if (max < 2147483647L)
        snprintf(what, sizeof what, "an integer from %ld to %ld", min, max);
    if (!v) {
        if (flags & JV_REQUIRED) {
            bai_diag_add(d, child, "missing: expected %s", what);
            return -1;
        }
        return 0;
    }
    x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(x) || floor(x) != x || x < (double)min || x > (double)max) {
        expected(d, child, what, v);
        return -1;
    }
    *out = (int)x;
    return 1;
}

int jv_bool(struct bai_diag *d, const cJSON *obj, const char *key, const char *path, unsigned flags, bool *out)
{
    char child[JV_PATH_MAX];
    const cJSON *v = jv_get(obj, key);

    jv_child(child, path, key);
    if (!v) {
        if (flags & JV_REQUIRED) {
            bai_diag_add(d, child, "missing: expected true or false");
            return -1;
        }
        return 0;
    }
    if (!cJSON_IsBool(v)) {
        expected(d, child, "true or false", v);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

int jv_array(struct bai_diag *d, const cJSON *obj, const char *key, const char *path, const cJSON **out)
{
    char child[JV_PATH_MAX];
    const cJSON *v = jv_get(obj, key);

    *out = NULL;
    jv_child(child, path, key);
    if (!v)
        return 0;
    if (!cJSON_IsArray(v)) {
        expected(d, child, "an array", v);
        return -1;
    }
    *out = v;
    return 1;
}
