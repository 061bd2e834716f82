/* Reading Slurm's answers for batchai-job: its commands run without a shell, their records parsed by the keys
 * Slurm prints, so values holding spaces (a job name, a comment, a path, a pending reason) survive whole.
 *
 * Why text from the commands, not libslurm's API nor --json: batchai-job is one binary for every Slurm the
 * site runs (the tests drive Debian's 22.05 and 26.05.3 with the same build), while libslurm ties it to the
 * release it was built against and its wire protocol; and the commands' --json needs the openapi (22.05) or
 * data_parser (23.02 and later) plugins, whose object changed shape between those releases (job_state a
 * string, then a list; exit_code a number, then an object). `scontrol -o show job` prints one record per job
 * with the same keys on every release since long ago; it is read by those known keys, not cut at spaces. */
#ifndef BAI_SLURM_READ_H
#define BAI_SLURM_READ_H

#include <stdbool.h>
#include <stddef.h>

/* Run argv[0] (found on PATH) with argv, no shell; its standard output, NUL-terminated, into *out and its
 * first line of standard error into *err (both malloc'ed, NULL on failure to start). Returns its exit status,
 * 128+signal when killed, -1 when it could not run. */
int bai_run(char *const argv[], char **out, char **err);
/* bai_run with the standard error in *out too, as written (check-site shows Slurm's messages whole); when
 * argv[0] cannot run, *out says so. */
int bai_run_merged(char *const argv[], char **out);
/* bai_run with the output's length in *len (it may hold NUL bytes) and the standard error left on the caller's
 * own, so that Slurm's messages reach the user whole. */
int bai_run_bytes(char *const argv[], char **out, size_t *len);

/* One `scontrol -o show job` record split by its keys. */
struct bai_record {
    char *text;   /* the line, with a NUL written after every value */
    size_t n;
    struct { const char *key, *value; } kv[160];
};

/* The keys `scontrol -o show job` and `scontrol -o show node` print (22.05 through 26.05). */
extern const char *const bai_job_keys[], *const bai_node_keys[];

/* Split one record line by keys (the line is modified in place and must outlive rec). A value runs up to the
 * next " Key=" of keys, so spaces inside a value stay. */
void bai_record_parse(struct bai_record *rec, char *line, const char *const keys[]);
/* The value of key, or "" when the record has none. */
const char *bai_record_get(const struct bai_record *rec, const char *key);

#endif
