/* A YAML document into a cJSON tree, bounded: see yamltree.h. */
#include "yamltree.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "batchai_jobfile.h"
#include "jsonv.h"

/* One open mapping or sequence. */
struct level {
    cJSON *node;
    size_t entries;
    char *key;              /* mappings: the key whose value comes next, else NULL */
    struct jv_names keys;   /* mappings: the keys so far, for duplicates */
};

struct reader {
    struct level lv[BAI_JOB_MAX_DEPTH];
    int depth;
    size_t values;
    cJSON *root;
    struct bai_diag *d;
    char path[JV_PATH_MAX];
};

/* The path of the entry being read, e.g. inputs.cifar.path or environment_variables[2]. */
static const char *where(struct reader *r)
{
    char next[JV_PATH_MAX];

    r->path[0] = '\0';
    for (int k = 0; k < r->depth; k++) {
        const struct level *l = &r->lv[k];
        if (cJSON_IsObject(l->node)) {
            cJSON *last = l->node->child ? l->node->child->prev : NULL;
            const char *name = l->key ? l->key : last ? last->string : NULL;
            if (!name)
                break;
            jv_child_quoted(next, r->path, name);
        } else {
            jv_item(next, r->path, l->entries ? l->entries - 1 : 0);
        }
        memcpy(r->path, next, sizeof next);
    }
    return r->path;
}

static void fault(struct reader *r, const yaml_mark_t *m, const char *what)
{
    bai_diag_add(r->d, where(r), "%s at line %zu, column %zu", what, m->line + 1, m->column + 1);
}

static size_t digits(const char *s)
{
    size_t n = 0;

    while (isdigit((unsigned char)s[n]))
        n++;
    return n;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?: the core schema's decimal numbers, by hand (a
 * regular expression compiled per scalar would cost more than the rest of the reading). */
static bool is_number(const char *s)
{
    size_t n;

    s += *s == '-' || *s == '+';
    if (*s == '.') {
        if (!(n = digits(s + 1)))
            return false;
        s += 1 + n;
    } else {
        if (!(n = digits(s)))
            return false;
        s += n;
        if (*s == '.')
            s += 1 + digits(s + 1);
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        s += *s == '-' || *s == '+';
        if (!(n = digits(s)))
            return false;
        s += n;
    }
    return *s == '\0';
}

/* A scalar's value: plain ones resolved by YAML 1.2's core schema (the forms real files use), the rest
 * strings. */
static cJSON *scalar(const yaml_event_t *e)
{
    const char *s = (const char *)e->data.scalar.value;
    cJSON *v;

    if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return cJSON_CreateString(s);
    if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
        return cJSON_CreateNull();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        v = cJSON_CreateTrue();
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        v = cJSON_CreateFalse();
    else if (is_number(s))
        v = cJSON_CreateNumber(strtod(s, NULL));
    else
        return cJSON_CreateString(s);
    if (v && !(v->valuestring = strdup(s))) {
        cJSON_Delete(v);
        v = NULL;
    }
    return v;
}

/* Count a new value in its parent (and in the document) and attach it. Returns false on a fault (v is
 * freed). */
static bool attach(struct reader *r, cJSON *v, const yaml_mark_t *m)
{
    char what[96];
    struct level *top = r->depth ? &r->lv[r->depth - 1] : NULL;

    if (!v) {
        fault(r, m, "out of memory");
        return false;
    }
    /* A sequence's entry is counted first, so that a fault's path names the entry at fault. */
    if (top && cJSON_IsArray(top->node) && ++top->entries > BAI_JOB_MAX_ITEMS) {
        snprintf(what, sizeof what, "more entries than the limit of %d in one sequence", BAI_JOB_MAX_ITEMS);
        fault(r, m, what);
        cJSON_Delete(v);
        return false;
    }
    if (r->values++ == BAI_JOB_MAX_VALUES) {
        snprintf(what, sizeof what, "more values than the limit of %d in one file", BAI_JOB_MAX_VALUES);
        fault(r, m, what);
        cJSON_Delete(v);
        return false;
    }
    if (!top) {
        r->root = v;
    } else if (cJSON_IsArray(top->node)) {
        cJSON_AddItemToArray(top->node, v);
    } else {
        v->string = top->key; /* the tree owns the key from now on */
        top->key = NULL;
        cJSON_AddItemToArray(top->node, v);
    }
    return true;
}

/* A scalar where a mapping wants its next key. */
static bool take_key(struct reader *r, struct level *top, const yaml_event_t *e)
{
    char what[96];

    if (top->entries == BAI_JOB_MAX_ITEMS) {
        snprintf(what, sizeof what, "more keys than the limit of %d in one mapping", BAI_JOB_MAX_ITEMS);
        fault(r, &e->start_mark, what);
        return false;
    }
    top->key = strdup((const char *)e->data.scalar.value);
    if (!top->key) {
        fault(r, &e->start_mark, "out of memory");
        return false;
    }
    top->entries++;
    if (jv_seen(r->d, where(r), &top->keys, top->key)) {
        fault(r, &e->start_mark, "duplicate key");
        return false;
    }
    return true;
}

/* One event. Returns 1 to go on, 0 at the end of the stream, -1 on a fault. */
static int step(struct reader *r, const yaml_event_t *e, bool *seen_document)
{
    struct level *top = r->depth ? &r->lv[r->depth - 1] : NULL;
    bool want_key = top && cJSON_IsObject(top->node) && !top->key;
    const yaml_char_t *anchor = NULL, *tag = NULL;
    char what[128];

    switch (e->type) {
    case YAML_STREAM_END_EVENT:
        return 0;
    case YAML_DOCUMENT_START_EVENT:
        if (*seen_document) {
            fault(r, &e->start_mark, "a second YAML document: a job file holds one");
            return -1;
        }
        *seen_document = true;
        return 1;
    case YAML_ALIAS_EVENT:
        fault(r, &e->start_mark, "an alias (*name): aliases and anchors are not accepted, since they can make a "
                                 "small file expand without bound; write the value out");
        return -1;
    case YAML_SCALAR_EVENT:
        anchor = e->data.scalar.anchor;
        tag = e->data.scalar.tag;
        break;
    case YAML_SEQUENCE_START_EVENT:
        anchor = e->data.sequence_start.anchor;
        tag = e->data.sequence_start.tag;
        break;
    case YAML_MAPPING_START_EVENT:
        anchor = e->data.mapping_start.anchor;
        tag = e->data.mapping_start.tag;
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        jv_names_free(&top->keys);
        r->depth--;
        return 1;
    default:
        return 1;
    }
    if (anchor) {
        fault(r, &e->start_mark, "an anchor (&name): aliases and anchors are not accepted, since they can make "
                                 "a small file expand without bound; write the value out");
        return -1;
    }
    if (tag) {
        snprintf(what, sizeof what, "a tag (%.40s): tags are not accepted, write the value plainly", (const char *)tag);
        fault(r, &e->start_mark, what);
        return -1;
    }
    if (e->type == YAML_SCALAR_EVENT && e->data.scalar.length > BAI_JOB_MAX_STRING) {
        snprintf(what, sizeof what, "a scalar of %zu bytes, longer than the limit of %d", e->data.scalar.length,
                 BAI_JOB_MAX_STRING);
        fault(r, &e->start_mark, what);
        return -1;
    }
    if (want_key) {
        if (e->type != YAML_SCALAR_EVENT) {
            fault(r, &e->start_mark, "a key that is a mapping or a sequence: keys are names");
            return -1;
        }
        return take_key(r, top, e) ? 1 : -1;
    }
    if (e->type == YAML_SCALAR_EVENT)
        return attach(r, scalar(e), &e->start_mark) ? 1 : -1;
    if (r->depth == BAI_JOB_MAX_DEPTH) {
        snprintf(what, sizeof what, "nesting deeper than %d levels", BAI_JOB_MAX_DEPTH);
        fault(r, &e->start_mark, what);
        return -1;
    }
    cJSON *node = e->type == YAML_MAPPING_START_EVENT ? cJSON_CreateObject() : cJSON_CreateArray();
    if (!attach(r, node, &e->start_mark))
        return -1;
    r->lv[r->depth++] = (struct level){ .node = node };
    return 1;
}

cJSON *bai_yaml_tree(const char *text, size_t len, struct bai_diag *d)
{
    struct reader r = { .d = d };
    yaml_parser_t parser;
    yaml_event_t e;
    bool seen_document = false;
    int rc = 1;

    if (!yaml_parser_initialize(&parser)) {
        bai_diag_add(d, "", "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (rc > 0) {
        if (!yaml_parser_parse(&parser, &e)) {
            bai_diag_add(d, where(&r), "not valid YAML: %s at line %zu, column %zu",
                         parser.problem ? parser.problem : "syntax error", parser.problem_mark.line + 1,
                         parser.problem_mark.column + 1);
            rc = -1;
            break;
        }
        rc = step(&r, &e, &seen_document);
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&parser);
    for (int k = 0; k < r.depth; k++) {
        jv_names_free(&r.lv[k].keys);
        free(r.lv[k].key);
    }
    if (rc == 0 && !r.root) {
        bai_diag_add(d, "", "the file holds no YAML document: expected a mapping (an Azure ML command job)");
        rc = -1;
    }
    if (rc < 0) {
        cJSON_Delete(r.root);
        return NULL;
    }
    return r.root;
}

bool bai_yaml_type_is(const char *text, size_t len, const char *type)
{
    struct bai_diag d = { 0 };
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    if (i < len && (text[i] == '{' || text[i] == '['))
        return false;
    cJSON *root = bai_yaml_tree(text, len, &d);
    const cJSON *t = root ? jv_get(root, "type") : NULL;
    bool yes = cJSON_IsObject(root) && cJSON_IsString(t) && strcmp(t->valuestring, type) == 0;
    cJSON_Delete(root);
    bai_diag_free(&d);
    return yes;
}
