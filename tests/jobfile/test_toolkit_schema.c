/* The toolkit table (spank_plugin/jobfile/toolkits.c) and schemas/job.schema.json say the same: the same
 * toolkits (Job.oneOf, Job.properties and JobPropertyName), each closed (additionalProperties false) with the same keys, the same required keys,
 * and each key of the same kind (a count is #/definitions/count, a path #/definitions/shellPath, shell text
 * #/definitions/commandText, a line any other string). The schema is written by hand for its readers
 * (descriptions, patterns, CNTK's rules as if/then/else); this keeps it from drifting from the table that
 * the C parser runs. Also: no row takes more than BAI_TOOLKIT_MAX_KEYS keys, nor the table more than
 * BAI_TOOLKIT_MAX rows; and every key that the code reads by name (bai_toolkit_str/_int with a literal, in
 * USERS) is a key of some row, of that kind: a misspelt name would read as "not given" and never fail. Run
 * from the repository root. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batchai_jobfile.h"
#include "toolkits.h"

#include "../check.h"

#define SCHEMA "schemas/job.schema.json"
/* The files that read toolkit keys by name. */
static const char *const USERS[] = {"spank_plugin/jobfile/toolkits.c", "spank_plugin/jobfile/job.c",
                                    "spank_plugin/jobfile/translate.c", "spank_plugin/jobfile/toolkit_steps.c"};

static const cJSON *get(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* The definition a "$ref": "#/definitions/NAME" names, or NULL. */
static const cJSON *deref(const cJSON *defs, const cJSON *node)
{
    const cJSON *ref = get(node, "$ref");
    const char *prefix = "#/definitions/";
    if (!cJSON_IsString(ref) || strncmp(ref->valuestring, prefix, strlen(prefix)) != 0)
        return NULL;
    return get(defs, ref->valuestring + strlen(prefix));
}

static const struct bai_toolkit *row(const char *property)
{
    for (size_t i = 0; i < bai_toolkit_count; i++)
        if (strcmp(bai_toolkits[i].property, property) == 0)
            return &bai_toolkits[i];
    return NULL;
}

static const struct bai_toolkit_key *row_key(const struct bai_toolkit *tk, const char *name)
{
    for (const struct bai_toolkit_key *k = tk->keys; k->name; k++)
        if (strcmp(k->name, name) == 0)
            return k;
    return NULL;
}

static bool in_string_array(const cJSON *array, const char *s)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, array)
        if (cJSON_IsString(item) && strcmp(item->valuestring, s) == 0)
            return true;
    return false;
}

/* A check that the schema and the table (spank_plugin/jobfile/toolkits.c) agree on `property`. */
#define AGREE(cond, property, fmt, ...) CHECK(cond, SCHEMA ": %s: " fmt, property, __VA_ARGS__)

/* Does the schema's property `p` take the kind of value `value`? */
static bool same_kind(const cJSON *p, enum bai_toolkit_value value)
{
    const cJSON *ref = get(p, "$ref");
    const char *r = cJSON_IsString(ref) ? ref->valuestring : "";
    switch (value) {
    case BAI_TK_INT: return strcmp(r, "#/definitions/count") == 0;
    case BAI_TK_PATH: return strcmp(r, "#/definitions/shellPath") == 0;
    case BAI_TK_TEXT: return strcmp(r, "#/definitions/commandText") == 0;
    case BAI_TK_LINE:
        return cJSON_IsString(get(p, "type")) && strcmp(get(p, "type")->valuestring, "string") == 0 && !*r;
    }
    return false;
}

static void check_toolkit(const cJSON *defs, const cJSON *job, const struct bai_toolkit *tk)
{
    const cJSON *def = deref(defs, get(get(job, "properties"), tk->property));
    AGREE(def, tk->property, "%s is a toolkit of the table but no property of Job with a $ref to its definition",
          tk->property);
    if (!def)
        return;
    AGREE(cJSON_IsFalse(get(def, "additionalProperties")), tk->property, "%s",
          "its definition is not closed (additionalProperties: false)");
    const cJSON *props = get(def, "properties"), *required = get(def, "required"), *p;
    size_t n = 0;
    for (const struct bai_toolkit_key *k = tk->keys; k->name; k++, n++) {
        p = get(props, k->name);
        AGREE(p, tk->property, "key %s is in the table, not in the schema", k->name);
        if (!p)
            continue;
        AGREE(k->required == in_string_array(required, k->name), tk->property, "key %s is required in the %s only",
              k->name, k->required ? "table" : "schema");
        AGREE(same_kind(p, k->value), tk->property, "key %s takes another kind of value in the schema than in the table",
              k->name);
    }
    AGREE(n <= BAI_TOOLKIT_MAX_KEYS, tk->property, "%s",
          "takes more keys than BAI_TOOLKIT_MAX_KEYS (batchai_jobfile.h)");
    cJSON_ArrayForEach(p, props)
        AGREE(row_key(tk, p->string), tk->property, "key %s is in the schema, not in the table", p->string);
    cJSON_ArrayForEach(p, required)
        AGREE(!cJSON_IsString(p) || row_key(tk, p->valuestring), tk->property,
              "required key %s is in the schema, not in the table", p->valuestring);
}

/* Is `name` a key of some row, taking a count (want_int) or a string? */
static bool declared(const char *name, bool want_int)
{
    for (size_t i = 0; i < bai_toolkit_count; i++) {
        const struct bai_toolkit_key *k = row_key(&bai_toolkits[i], name);
        if (k && (k->value == BAI_TK_INT) == want_int)
            return true;
    }
    return false;
}

/* Every bai_toolkit_str(x, "KEY") and bai_toolkit_int(x, "KEY") in `path` names a declared key. */
static void check_key_reads(const char *path)
{
    struct bai_diag diag = {0};
    char *text = NULL;
    size_t len = 0, reads = 0;
    int read = bai_job_read(path, &text, &len, &diag);
    CHECK(read == 0, "%s cannot be read", path);
    if (read != 0) {
        bai_diag_print(&diag, stderr, "");
        bai_diag_free(&diag);
        return;
    }
    for (const char *p = text; (p = strstr(p, "bai_toolkit_")) != NULL; p++) {
        bool is_int = strncmp(p, "bai_toolkit_int(", 16) == 0;
        if (!is_int && strncmp(p, "bai_toolkit_str(", 16) != 0)
            continue;
        const char *comma = strchr(p, ','), *close = strchr(p, ')');
        if (!comma || !close || comma > close)
            continue; /* the declaration's or a comment's mention */
        const char *q = comma + 1;
        while (*q == ' ')
            q++;
        const char *end = *q == '"' ? strchr(q + 1, '"') : NULL;
        if (!end || end > close)
            continue; /* a key passed in a variable */
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(end - q - 1), q + 1);
        reads++;
        CHECK(declared(name, is_int), "%s: reads the toolkit key \"%s\" as a %s, which no row of the table "
              "(spank_plugin/jobfile/toolkits.c) declares so", path, name, is_int ? "count" : "string");
    }
    check_note("toolkit_schema: %zu key reads by name in %s", reads, path);
    free(text);
}

int main(void)
{
    struct bai_diag diag = {0};
    char *text = NULL;
    size_t len = 0;
    if (bai_job_read(SCHEMA, &text, &len, &diag) != 0) {
        bai_diag_print(&diag, stderr, "");
        fprintf(stderr, "run from the repository root\n");
        bai_diag_free(&diag);
        return 1;
    }
    cJSON *schema = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *defs = get(schema, "definitions"), *job = get(defs, "Job");
    if (!job) {
        fprintf(stderr, SCHEMA ": no definitions.Job\n");
        cJSON_Delete(schema);
        return 1;
    }
    /* The toolkits: Job.oneOf lists one {"required": [property]} each. */
    const cJSON *choice;
    size_t listed = 0;
    cJSON_ArrayForEach(choice, get(job, "oneOf")) {
        const cJSON *req = get(choice, "required");
        bool one = cJSON_GetArraySize(req) == 1 && cJSON_IsString(cJSON_GetArrayItem(req, 0));
        AGREE(one, "Job.oneOf", "%s", "an entry is not {\"required\": [one toolkit]}");
        if (!one)
            continue;
        const char *property = cJSON_GetArrayItem(req, 0)->valuestring;
        listed++;
        AGREE(row(property), property, "%s is a toolkit of the schema (Job.oneOf), not of the table", property);
    }
    /* JobPropertyName, which the top level's propertyNames use, names every property of Job and no other. */
    const cJSON *names = get(get(defs, "JobPropertyName"), "enum"), *p;
    cJSON_ArrayForEach(p, get(job, "properties"))
        AGREE(in_string_array(names, p->string), "JobPropertyName", "%s is a property of Job, not in JobPropertyName",
              p->string);
    cJSON_ArrayForEach(p, names)
        AGREE(cJSON_IsString(p) && get(get(job, "properties"), p->valuestring), "JobPropertyName",
              "%s is in JobPropertyName, not a property of Job",
              cJSON_IsString(p) ? p->valuestring : "an entry that is not a string");
    for (size_t i = 0; i < bai_toolkit_count; i++) {
        bool in_one_of = false;
        cJSON_ArrayForEach(choice, get(job, "oneOf"))
            in_one_of = in_one_of || in_string_array(get(choice, "required"), bai_toolkits[i].property);
        AGREE(in_one_of, bai_toolkits[i].property, "%s is a toolkit of the table, not in the schema's Job.oneOf",
              bai_toolkits[i].property);
        check_toolkit(defs, job, &bai_toolkits[i]);
    }
    AGREE(bai_toolkit_count <= BAI_TOOLKIT_MAX, "bai_toolkits", "%s", "has more rows than BAI_TOOLKIT_MAX (toolkits.h)");
    for (size_t i = 0; i < sizeof USERS / sizeof USERS[0]; i++)
        check_key_reads(USERS[i]);
    check_note("toolkit_schema: %zu toolkits in the table, %zu in the schema", bai_toolkit_count, listed);
    cJSON_Delete(schema);
    return check_exit("toolkit_schema");
}
