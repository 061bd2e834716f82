/* What batchai-job's pipeline and sweep commands share about the YAML file they were given: what kind of
 * file it is, where the jobs it becomes are written (BASE), and writing those jobs. */
#ifndef BAI_GRAPH_FILE_H
#define BAI_GRAPH_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobfile/batchai_jobfile.h"

/* Whether the file at path is read and detect says yes (an unreadable file is of no kind). */
bool bai_graph_file_is(const char *path, bool (*detect)(const char *text, size_t len));

/* The file's absolute path into file (a leading "./" dropped: the plugin takes only plain absolute paths for
 * the logs beside it) and BASE into base: the file's directory and `name`, or the file's name without .yml or
 * .yaml. 0, or -1 with the reason printed when a path is too long. */
int bai_graph_paths(const char *path, const char *name, char *file, size_t file_size, char *base, size_t base_size);

/* A seed for a sweep's random sampling when the user gave none (it is recorded with the sweep). */
uint64_t bai_graph_seed(void);

/* A bai_job_reader whose arg is the text itself (a generated command job). */
int bai_text_read(void *arg, const char *path, char **text, size_t *len, struct bai_diag *d);

/* The JSON record at path (a pipeline's or a sweep's, written by bai_write_file_atomic), read within a job
 * file's bounds (bai_job_read); NULL when it cannot be read or parsed, the read's faults in d unless d is
 * NULL. */
struct cJSON *bai_read_json(const char *path, struct bai_diag *d);

/* Write text to path through a temporary file and a rename, so that no reader sees half of it (0, or -1 with
 * errno). */
int bai_write_file_atomic(const char *path, const char *text);

#endif
