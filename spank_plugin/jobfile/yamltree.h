/* A YAML document read with libyaml into a cJSON tree, so that an Azure ML command job is validated by the
 * same accessors (jsonv.h) as a job.json.
 *
 * Contract:
 *  - One document whose nodes are mappings, sequences and scalars. A plain scalar is resolved as YAML 1.2's
 *    core schema does (null, true/false, an integer or a decimal number, else a string); a quoted or block
 *    scalar is a string. Numbers and booleans keep the text they were written as in valuestring, so that
 *    `learning_rate: 0.2` substitutes as "0.2".
 *  - Hostile input gets a fault naming the problem and its line and column, and no tree: aliases and anchors
 *    (an alias can make a small file expand without bound), tags, keys that are not scalars, duplicate keys
 *    (compared in O(n log n)), more than one document, and the limits of batchai_jobfile.h: nesting deeper than
 *    BAI_JOB_MAX_DEPTH, more than BAI_JOB_MAX_ITEMS entries in a mapping or sequence, more than
 *    BAI_JOB_MAX_VALUES values in all, scalars longer than BAI_JOB_MAX_STRING. The first fault ends the
 *    reading, so time grows linearly with the text whatever it holds.
 *  - The caller has checked the text's size and that it holds no NUL byte (job.c). */
#ifndef BAI_YAMLTREE_H
#define BAI_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "batchai_jobfile.h"

/* The document as a tree (free with cJSON_Delete), or NULL with faults in d. */
cJSON *bai_yaml_tree(const char *text, size_t len, struct bai_diag *d);

/* Whether text is a YAML mapping (not JSON) whose `type` is the string `type`: how batchai-job tells an Azure
 * ML pipeline or sweep file from a command job. */
bool bai_yaml_type_is(const char *text, size_t len, const char *type);

#endif
