/* Diagnostics: a list of faults, each naming where it is and what was expected.
 *
 * Validation never stops at the first fault; it records every one so that a user fixes the job file in one
 * pass. Messages are formatted "<json path>: <what is wrong>", e.g.
 *   properties.nodeCount: expected an integer >= 1, got "four"
 * The list is bounded (BAI_DIAG_MAX): past that a single "... and N more" line stands for the rest, so a
 * hostile file cannot make the report itself unbounded. */
#ifndef BAI_DIAG_H
#define BAI_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#define BAI_DIAG_MAX 64

struct bai_diag {
    char *msg[BAI_DIAG_MAX];
    size_t count;   /* messages stored */
    size_t dropped; /* faults past BAI_DIAG_MAX, counted but not stored */
};

/* Record one fault at `path` (may be NULL or "" for file-level faults). Never fails: on allocation
 * failure the fault is counted as dropped. */
void bai_diag_add(struct bai_diag *d, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void bai_diag_vadd(struct bai_diag *d, const char *path, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Total faults recorded, stored or dropped. */
size_t bai_diag_total(const struct bai_diag *d);

/* Print every message to `f`, one per line, each prefixed with `prefix` (e.g. "job.json: "). */
void bai_diag_print(const struct bai_diag *d, FILE *f, const char *prefix);

/* Call fn(arg, message) for every message, then for the "... and N more" line if any. Used by the SPANK
 * plugin to route messages through slurm_error(). */
void bai_diag_each(const struct bai_diag *d, void (*fn)(void *arg, const char *msg), void *arg);

void bai_diag_free(struct bai_diag *d);

#endif
