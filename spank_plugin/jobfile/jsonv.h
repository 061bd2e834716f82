/* Validating accessors over a cJSON tree.
 *
 * Each accessor checks one member of an object and records a fault naming its JSON path when it is missing
 * (if required), of the wrong type, or out of range. Messages read "expected <what>, got <value>", where the
 * value is shown briefly and safely (quoted, escaped, cut after 40 characters). Accessors return 1 when the
 * member is present and valid, 0 when it is absent, -1 on a fault (already recorded). */
#ifndef BAI_JSONV_H
#define BAI_JSONV_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "batchai_jobfile.h"

#define JV_PATH_MAX 256

enum jv_flags {
    JV_REQUIRED = 1 << 0,
    JV_NONEMPTY = 1 << 1,  /* strings: at least one character */
    JV_MULTILINE = 1 << 2, /* strings: tab and newline allowed (command lines); other controls never are */
    JV_SECRET = 1 << 3,    /* a secret's value: faults name its type only, never the value */
};

/* "parent.key" (or "key" when parent is empty) and "parent[i]". */
void jv_child(char *out, const char *parent, const char *key);
void jv_item(char *out, const char *parent, size_t index);
/* As jv_child, for a name the file chose: unless it is plain (letters, digits, _ $ -; 1 to 64 characters) it
 * is quoted and cut as jv_describe does, so that the path is safe to print. */
void jv_child_quoted(char *out, const char *parent, const char *key);

/* A short, printable description of a value for messages. */
void jv_describe(const cJSON *v, char *out, size_t size);

/* Fault "expected <what>, got <v>" unless v is an object; true when it is. */
bool jv_expect_object(struct bai_diag *d, const cJSON *v, const char *path, const char *what);

/* Fault unless v is an object; then fault on every member not in `known` (NULL-terminated) and on every
 * duplicate member. Returns true when v is an object (even with faulty members). Takes O(n log n) string
 * comparisons for n members, whatever their names. */
bool jv_object(struct bai_diag *d, const cJSON *v, const char *path, const char *const known[]);

/* A set of names for duplicate checks across several objects: O(log n) comparisons a name, whatever the
 * names (a balanced tree; hashing could be driven to quadratic time by chosen names). Names are not copied:
 * they must outlive the set. Start from { 0 }. */
struct jv_names {
    void *root;
};
/* Whether `name` is already in the set; if it is not, it is added. Out of memory is a fault at `path`. */
bool jv_seen(struct bai_diag *d, const char *path, struct jv_names *set, const char *name);
void jv_names_free(struct jv_names *set);

const cJSON *jv_get(const cJSON *obj, const char *key);

int jv_string(struct bai_diag *d, const cJSON *obj, const char *key, const char *path, unsigned flags,
              char **out);
int jv_int(struct bai_diag *d, const cJSON *obj, const char *key, const char *path, long min, long max,
           unsigned flags, int *out);
int jv_bool(struct bai_diag *d, const cJSON *obj, const char *key, const char *path, unsigned flags, bool *out);
/* An array member: checks the type; *out is the array or NULL. (Its length was bounded, as every array's, by
 * bai_job_parse before parsing.) */
int jv_array(struct bai_diag *d, const cJSON *obj, const char *key, const char *path, const cJSON **out);

/* Text checks shared with callers that validate derived strings. */
bool jv_utf8_valid(const char *s, size_t len);

#endif
