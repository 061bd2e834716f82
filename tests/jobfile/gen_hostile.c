/* Hostile job files for the golden tests and the validate benchmark, written at run time (files of 1 MiB do
 * not belong in git). Each is as large as the reader accepts (BAI_JOB_MAX_BYTES, reached by padding with
 * spaces) and aims at one bound of the reader, or drives one of its duplicate checks to its worst case: many
 * long names that differ only in their last characters.
 *   gen_hostile DIR   writes DIR/valid/<case>.json, and DIR/invalid/<case>.json with <case>.json.why (the JSON
 *                     path its fault is reported at, "(document)" for the file itself, as in
 *                     tests/jobfiles/invalid/); the Azure ML command jobs (YAML) as <case>.yml alike
 * Exit status 0, 1 with a message when a file cannot be written, 2 on a usage error. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batchai_jobfile.h"

#define ITEMS BAI_JOB_MAX_ITEMS
/* Every case starts from this valid job, so that its hostile part is its only fault. */
#define JOB_HEAD                                                                                            \
    "{\"properties\": {\"nodeCount\": 1, \"stdOutErrPathPrefix\": \"/logs\", "                              \
    "\"customMpiSettings\": {\"commandLine\": \"true\"}"
/* Where the repeated part of a case stops: room is left for its closing text. */
#define BUDGET (BAI_JOB_MAX_BYTES - 4096L)

static void fill(FILE *f, char c, long n)
{
    for (long i = 0; i < n; i++)
        fputc(c, f);
}

/* A name of `len` characters that differs from its neighbours only in its last four. */
static void near_name(FILE *f, char first, long len, unsigned index)
{
    fputc(first, f);
    fill(f, 'x', len - 5);
    fprintf(f, "%04u", index);
}

static void too_large(FILE *f)
{
    fputs(JOB_HEAD "}}", f);
}

/* 256 variables and 256 secrets with names of about 2 KB; `twice`: the last secret repeats the first name. */
static void env_names(FILE *f, bool twice)
{
    long len = BUDGET / (2 * ITEMS) - 40;

    fputs(JOB_HEAD, f);
    for (unsigned k = 0; k < 2; k++) {
        fprintf(f, ", \"%s\": [", k ? "secrets" : "environmentVariables");
        for (unsigned i = 0; i < ITEMS; i++) {
            unsigned n = k * ITEMS + i;
            fputs(i ? ", {\"name\": \"" : "{\"name\": \"", f);
            near_name(f, 'V', len, twice && n == 2 * ITEMS - 1 ? 0 : n);
            fputs("\", \"value\": \"\"}", f);
        }
        fputc(']', f);
    }
    fputs("}}", f);
}

static void at_limit(FILE *f)
{
    env_names(f, false);
}

static void near_duplicate_env_names(FILE *f)
{
    env_names(f, true);
}

/* 256 mounts of each kind at paths of about 1 KB; the last one repeats the first path. */
static void near_duplicate_mount_paths(FILE *f)
{
    static const char *const groups[][2] = {
        { "azureFileShares", "\"azureFileUrl\": \"https://a.file.core.windows.net/s\"" },
        { "azureBlobFileSystems", "\"containerName\": \"c\"" },
        { "fileServers", "\"fileServer\": {\"id\": \"f/s\"}" },
        { "unmanagedFileSystems", "\"mountCommand\": \"true\"" },
    };
    long len = BUDGET / (4 * ITEMS) - 90;

    fputs(JOB_HEAD ", \"mountVolumes\": {", f);
    for (unsigned g = 0; g < 4; g++) {
        fprintf(f, "%s\"%s\": [", g ? ", " : "", groups[g][0]);
        for (unsigned i = 0; i < ITEMS; i++) {
            unsigned n = g * ITEMS + i;
            fprintf(f, "%s{%s, \"relativeMountPath\": \"", i ? ", " : "", groups[g][1]);
            near_name(f, 'm', len, n == 4 * ITEMS - 1 ? 0 : n);
            fputs("\"}", f);
        }
        fputc(']', f);
    }
    fputs("}}}", f);
}

/* 256 input directories with ids of about 4 KB; the last one repeats the first id. */
static void near_duplicate_input_ids(FILE *f)
{
    long len = BUDGET / ITEMS - 40;

    fputs(JOB_HEAD ", \"inputDirectories\": [", f);
    for (unsigned i = 0; i < ITEMS; i++) {
        fputs(i ? ", {\"id\": \"" : "{\"id\": \"", f);
        near_name(f, 'I', len, i == ITEMS - 1 ? 0 : i);
        fputs("\", \"path\": \"/d\"}", f);
    }
    fputs("]}}", f);
}

/* Distinct unknown keys up to half the file, then a known key repeated: checking each repeat against every
 * member before its first occurrence, as the reader once did, takes seconds. */
static void repeated_key(FILE *f)
{
    fputs(JOB_HEAD, f);
    for (unsigned i = 0; ftell(f) < BUDGET / 2; i++)
        fprintf(f, ", \"k%u\": 0", i);
    while (ftell(f) < BUDGET)
        fputs(", \"secrets\": []", f);
    fputs("}}", f);
}

/* 256 variables and 256 secrets, each repeating "value" and then "name" 60 times: many objects full of
 * duplicates, where checking each member against every one before it takes 3,600 comparisons. */
static void nested_duplicate_keys(FILE *f)
{
    fputs(JOB_HEAD, f);
    for (unsigned k = 0; k < 2; k++) {
        fprintf(f, ", \"%s\": [", k ? "secrets" : "environmentVariables");
        for (unsigned i = 0; i < ITEMS; i++) {
            fputs(i ? ", {" : "{", f);
            for (unsigned j = 0; j < 60; j++)
                fputs("\"value\": \"\", ", f);
            for (unsigned j = 0; j < 60; j++)
                fputs(j ? ", \"name\": \"A\"" : "\"name\": \"A\"", f);
            fputc('}', f);
        }
        fputc(']', f);
    }
    fputs("}}", f);
}

/* Arrays of arrays, each within the entry limit, until the file holds more values than allowed. */
static void many_values(FILE *f)
{
    fputs(JOB_HEAD ", \"inputDirectories\": [", f);
    for (unsigned i = 0; i < ITEMS; i++) {
        fputs(i ? ", [0" : "[0", f);
        for (unsigned j = 1; j < ITEMS; j++)
            fputs(",0", f);
        fputc(']', f);
    }
    fputs("]}}", f);
}

/* As many distinct keys as fit in one object. */
static void many_keys(FILE *f)
{
    fputs(JOB_HEAD ", \"mountVolumes\": {", f);
    for (unsigned i = 0; ftell(f) < BUDGET; i++)
        fprintf(f, "%s\"k%u\": 0", i ? ", " : "", i);
    fputs("}}}", f);
}

/* Keys of about 4 KB that differ only at the end, up to the member limit. */
static void near_duplicate_keys(FILE *f)
{
    long len = BUDGET / ITEMS - 10;

    fputs(JOB_HEAD ", \"mountVolumes\": {", f);
    for (unsigned i = 0; i < ITEMS; i++) {
        fputs(i ? ", \"" : "\"", f);
        near_name(f, 'k', len, i);
        fputs("\": 0", f);
    }
    fputs("}}}", f);
}

static void long_array(FILE *f)
{
    fputs(JOB_HEAD ", \"inputDirectories\": [0", f);
    while (ftell(f) < BUDGET)
        fputs(",0", f);
    fputs("]}}", f);
}

static void deep_nesting(FILE *f)
{
    fill(f, '[', BAI_JOB_MAX_BYTES);
}

static void long_string(FILE *f)
{
    fputs(JOB_HEAD ", \"jobPreparation\": {\"commandLine\": \"", f);
    fill(f, 'a', BUDGET - ftell(f));
    fputs("\"}}}", f);
}

static void long_key(FILE *f)
{
    fputs(JOB_HEAD ", \"", f);
    fill(f, 'k', BUDGET - ftell(f));
    fputs("\": 0}}", f);
}

static void long_number(FILE *f)
{
    fputs(JOB_HEAD ", \"constraints\": 1", f);
    fill(f, '0', BUDGET - ftell(f));
    fputs("}}", f);
}

/* ---- Azure ML command jobs (YAML) ---- */
#define YAML_HEAD "command: echo hi\nenvironment:\n  image: library/python:latest\n"

/* 256 variables of about 3.5 KB, a command of 56 KB with 256 literal inputs: valid, and as large as the
 * reader takes. */
static void yaml_at_limit(FILE *f)
{
    fputs("command: >-\n  echo", f);
    for (unsigned i = 0; i < ITEMS; i++)
        fprintf(f, " ${{inputs.in%03u}}", i);
    fputs("\n  ", f);
    fill(f, 'c', 50000);
    fputs("\nenvironment:\n  image: library/python:latest\ninputs:\n", f);
    for (unsigned i = 0; i < ITEMS; i++)
        fprintf(f, "  in%03u: %u\n", i, i);
    fputs("environment_variables:\n", f);
    for (unsigned i = 0; i < ITEMS - 1; i++) {
        fprintf(f, "  V%04u: \"", i);
        fill(f, 'v', 3300);
        fputs("\"\n", f);
    }
    fputs("  LAST: x\n", f);
}

/* The billion laughs: nine levels of anchors each aliasing the one before nine times. */
static void yaml_alias_bomb(FILE *f)
{
    fputs(YAML_HEAD "tags:\n  l0: &l0 \"lol\"\n", f);
    for (int k = 1; k < 10; k++)
        fprintf(f, "  l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", k, k, k - 1, k - 1, k - 1,
                k - 1, k - 1, k - 1, k - 1, k - 1, k - 1);
}

/* An alias with no anchor before it: still refused, by its own name. */
static void yaml_alias(FILE *f)
{
    fputs(YAML_HEAD "display_name: *name\n", f);
}

static void yaml_deep_flow(FILE *f)
{
    fputs(YAML_HEAD "tags: ", f);
    fill(f, '[', BUDGET - ftell(f));
    fputs("\n", f);
}

static void yaml_deep_block(FILE *f)
{
    fputs(YAML_HEAD "tags:\n", f);
    for (int k = 1; k <= 2 * BAI_JOB_MAX_DEPTH; k++) {
        fill(f, ' ', 2 * k);
        fprintf(f, "k%d:\n", k);
    }
}

static void yaml_long_scalar(FILE *f)
{
    fputs("environment:\n  image: library/python:latest\ncommand: \"", f);
    fill(f, 'a', BUDGET - ftell(f));
    fputs("\"\n", f);
}

/* 256 inputs of names 1000 bytes long (YAML's implicit keys stop at 1024) that differ in their last
 * characters; the last repeats the first. */
static void yaml_duplicate_keys(FILE *f)
{
    long len = 1000;

    fputs(YAML_HEAD "inputs:\n", f);
    for (unsigned i = 0; i < ITEMS; i++) {
        fputs("  ", f);
        near_name(f, 'K', len, i == ITEMS - 1 ? 0 : i);
        fputs(": 1\n", f);
    }
}

static void yaml_tag(FILE *f)
{
    fputs(YAML_HEAD "display_name: !!python/object/apply:os.system [\"true\"]\n", f);
}

/* 257 sequences of 255 numbers: more values than the file may hold. */
static void yaml_many_values(FILE *f)
{
    fputs(YAML_HEAD "tags:\n", f);
    for (unsigned i = 0; i < ITEMS; i++) {
        fprintf(f, "  t%03u: [0", i);
        for (unsigned k = 1; k < ITEMS - 1; k++)
            fputs(",0", f);
        fputs("]\n", f);
    }
}

static void yaml_long_sequence(FILE *f)
{
    fputs(YAML_HEAD "tags:\n  t: [0", f);
    for (unsigned k = 0; k < 4 * ITEMS; k++)
        fputs(",0", f);
    fputs("]\n", f);
}

static const struct hostile {
    const char *name;
    const char *why; /* the JSON path of its fault; NULL for a valid file */
    long size;       /* of the file: the text is padded with spaces before its last character */
    void (*write)(FILE *f);
} cases[] = {
    { "hostile-at-limit", NULL, BAI_JOB_MAX_BYTES, at_limit },
    { "hostile-too-large", "(document)", BAI_JOB_MAX_BYTES + 1L, too_large },
    { "hostile-near-duplicate-env-names", "properties.secrets[255].name", BAI_JOB_MAX_BYTES,
      near_duplicate_env_names },
    { "hostile-near-duplicate-mount-paths", "properties.mountVolumes.unmanagedFileSystems[255].relativeMountPath",
      BAI_JOB_MAX_BYTES, near_duplicate_mount_paths },
    { "hostile-near-duplicate-input-ids", "properties.inputDirectories[255].id", BAI_JOB_MAX_BYTES,
      near_duplicate_input_ids },
    { "hostile-repeated-key", "properties", BAI_JOB_MAX_BYTES, repeated_key },
    { "hostile-nested-duplicate-keys", "properties.environmentVariables[0].value", BAI_JOB_MAX_BYTES,
      nested_duplicate_keys },
    { "hostile-many-keys", "properties.mountVolumes", BAI_JOB_MAX_BYTES, many_keys },
    { "hostile-many-values", "properties.inputDirectories[254]", BAI_JOB_MAX_BYTES, many_values },
    { "hostile-near-duplicate-keys", "properties.mountVolumes", BAI_JOB_MAX_BYTES, near_duplicate_keys },
    { "hostile-long-array", "properties.inputDirectories", BAI_JOB_MAX_BYTES, long_array },
    { "hostile-deep-nesting", "(document)", BAI_JOB_MAX_BYTES, deep_nesting },
    { "hostile-long-string", "properties.jobPreparation.commandLine", BAI_JOB_MAX_BYTES, long_string },
    { "hostile-long-key", "properties", BAI_JOB_MAX_BYTES, long_key },
    { "hostile-long-number", "properties.constraints", BAI_JOB_MAX_BYTES, long_number },
    { "hostile-yaml-at-limit.yml", NULL, BAI_JOB_MAX_BYTES, yaml_at_limit },
    { "hostile-yaml-too-large.yml", "(document)", BAI_JOB_MAX_BYTES + 1L, yaml_at_limit },
    { "hostile-yaml-alias-bomb.yml", "tags.l0", BAI_JOB_MAX_BYTES, yaml_alias_bomb },
    { "hostile-yaml-alias.yml", "display_name", BAI_JOB_MAX_BYTES, yaml_alias },
    { "hostile-yaml-deep-flow.yml", "tags[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
      "[0][0][0][0][0][0][0]", BAI_JOB_MAX_BYTES, yaml_deep_flow },
    { "hostile-yaml-deep-block.yml", "tags.k1.k2.k3", BAI_JOB_MAX_BYTES, yaml_deep_block },
    { "hostile-yaml-long-scalar.yml", "command", BAI_JOB_MAX_BYTES, yaml_long_scalar },
    { "hostile-yaml-duplicate-keys.yml", "duplicate key", BAI_JOB_MAX_BYTES, yaml_duplicate_keys },
    { "hostile-yaml-tag.yml", "display_name", BAI_JOB_MAX_BYTES, yaml_tag },
    { "hostile-yaml-many-values.yml", "more values than the limit", BAI_JOB_MAX_BYTES, yaml_many_values },
    { "hostile-yaml-long-sequence.yml", "tags.t", BAI_JOB_MAX_BYTES, yaml_long_sequence },
};

static int write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");
    bool ok = f && fwrite(text, 1, len, f) == len;

    if ((f && fclose(f) != 0) || !ok) {
        fprintf(stderr, "gen_hostile: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int write_case(const char *dir, const struct hostile *c)
{
    char path[4096], *text = NULL, *padded;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc = -1;

    if (!f) {
        perror("gen_hostile: open_memstream");
        return -1;
    }
    c->write(f);
    if (fclose(f) != 0 || len == 0 || len > (size_t)c->size) {
        fprintf(stderr, "gen_hostile: %s: %zu bytes of text for a file of %ld\n", c->name, len, c->size);
        free(text);
        return -1;
    }
    padded = malloc((size_t)c->size);
    if (!padded) {
        fprintf(stderr, "gen_hostile: out of memory\n");
    } else {
        memcpy(padded, text, len - 1);
        memset(padded + len - 1, ' ', (size_t)c->size - len);
        padded[c->size - 1] = text[len - 1];
        /* A name with its own extension (.yml) keeps it; the rest are .json. */
        const char *ext = strchr(c->name, '.') ? "" : ".json";
        snprintf(path, sizeof path, "%s/%s/%s%s", dir, c->why ? "invalid" : "valid", c->name, ext);
        rc = write_file(path, padded, (size_t)c->size);
        if (rc == 0 && c->why) {
            char why[256];
            int n = snprintf(why, sizeof why, "%s\n", c->why);
            snprintf(path, sizeof path, "%s/invalid/%s%s.why", dir, c->name, ext);
            rc = write_file(path, why, (size_t)n);
        }
    }
    free(padded);
    free(text);
    return rc;
}

int main(int argc, char **argv)
{
    char dirs[3][4096];

    if (argc != 2) {
        fprintf(stderr, "usage: gen_hostile DIR\n");
        return 2;
    }
    snprintf(dirs[0], sizeof dirs[0], "%s", argv[1]);
    snprintf(dirs[1], sizeof dirs[1], "%s/valid", argv[1]);
    snprintf(dirs[2], sizeof dirs[2], "%s/invalid", argv[1]);
    for (int k = 0; k < 3; k++)
        if (mkdir(dirs[k], 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "gen_hostile: cannot create %s: %s\n", dirs[k], strerror(errno));
            return 1;
        }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (write_case(argv[1], &cases[i]) != 0)
            return 1;
    return 0;
}
