/* The toolkits of a job.json, one row each in bai_toolkits[] (toolkits.c): the JSON property that names it,
 * the keys its object takes (each with its kind of value and whether it is required), the rules between
 * them and how many tasks its main step runs; the main step itself is planned by toolkit_steps.h, a layer
 * up. The parser (job.c) and the translation (translate.c) know no toolkit by name, and of the keys only
 * processCount, which overrides any toolkit's task count: adding a toolkit, even one with a key no other
 * toolkit has, is a row there and its functions beside it, and its main step in toolkit_steps.c. schemas/job.schema.json states the same toolkits and keys for editors and other validators (with
 * descriptions and patterns the table has no use for); tests/jobfile/test_toolkit_schema fails when the two
 * disagree. */
#ifndef BAI_TOOLKITS_H
#define BAI_TOOLKITS_H

#include <stdbool.h>
#include <stddef.h>

#include "batchai_jobfile.h"

struct bai_job;
struct bai_toolkit_settings;

/* What a key's value must be. */
enum bai_toolkit_value {
    BAI_TK_LINE, /* a non-empty one-line string */
    BAI_TK_TEXT, /* shell text (a command line, arguments): tabs and newlines allowed, may be empty */
    BAI_TK_PATH, /* a file the main step runs or reads: a line that is one shell word (bai_shell_path_ok) */
    BAI_TK_INT,  /* a count, 1 .. BAI_JOB_MAX_NODES * 64 */
};

struct bai_toolkit_key {
    const char *name; /* as in job.json, e.g. "pythonScriptFilePath"; NULL ends a row's list */
    enum bai_toolkit_value value;
    bool required;
};

struct bai_toolkit {
    const char *property;                  /* the JSON property, e.g. "horovodSettings" */
    const struct bai_toolkit_key *keys;    /* its keys, at most BAI_TOOLKIT_MAX_KEYS (batchai_jobfile.h) */
    /* Faults between fields, past each key's own check. NULL: none. */
    void (*rules)(struct bai_diag *d, const char *path, const struct bai_job *job);
    /* The main step's task count when the file gives no processCount. NULL: nodeCount. */
    int (*task_count)(const struct bai_job *job);
};

extern const struct bai_toolkit bai_toolkits[];
extern const size_t bai_toolkit_count; /* at most BAI_TOOLKIT_MAX */
#define BAI_TOOLKIT_MAX 32

/* The value the job file gave `key` of its toolkit: NULL (a string) or 0 (a count) when it gave none or its
 * toolkit takes no such key (an Azure ML job has none). */
const char *bai_toolkit_str(const struct bai_toolkit_settings *t, const char *key);
int bai_toolkit_int(const struct bai_toolkit_settings *t, const char *key);

/* Is a cntkSettings job a Python one? languageType says; without one, a Python script with no config file. */
bool bai_cntk_python(const struct bai_toolkit_settings *t);

#endif
