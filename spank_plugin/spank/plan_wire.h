/* The plan as the unprivileged parser hands it to root (SECURITY.md, "The plan"): the few fields root and the
 * prolog's user child act on, in a format of the project's own that a short, obviously bounded reader takes
 * apart. No JSON, no YAML, no job-file library on root's side of the pipe.
 *
 *   "BAIPLAN1"                                  8 bytes
 *   record*: tag (1 byte) | length (4 bytes, big-endian) | payload (length bytes)
 *   'Z' with length 0, last
 *
 *   tag  payload                                         count
 *   J    job id, decimal                                 1
 *   U    uid, decimal                                    1
 *   D    SHA-256 of the job file, 64 lowercase hex       1
 *   d    job_dir ("%j"-pattern)                          1
 *   l    log_dir ("%j"-pattern)                          1
 *   s    secrets_file ("%j"-pattern)                     0-1
 *   M    target NUL site_path NUL share NUL flag NUL     0-BAI_WIRE_MAX_MOUNTS (site_path, share may be
 *                                                        empty: an unmanaged file system; flag "u": the
 *                                                        user's own directory, else "-")
 *   E    name NUL value NUL secret NUL                   0-BAI_WIRE_MAX_ENV (secret "1" or "0")
 *
 * Limits: the whole plan at most BAI_WIRE_MAX_BYTES, a payload at most BAI_WIRE_FIELD_MAX; no NUL inside a
 * value; unknown, repeated or missing tags, trailing bytes, a short record: all refused. */
#ifndef BAI_PLAN_WIRE_H
#define BAI_PLAN_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jobfile/batchai_jobfile.h"

#define BAI_WIRE_MAGIC "BAIPLAN1"
#define BAI_WIRE_MAX_BYTES (4u << 20)
#define BAI_WIRE_FIELD_MAX (1u << 20)
#define BAI_WIRE_MAX_MOUNTS 256
#define BAI_WIRE_MAX_ENV 4096
#define BAI_WIRE_WHY_MAX 256

struct bai_wire_plan {
    uint32_t jobid;
    uid_t uid;
    char digest[65];
    struct bai_plan plan; /* job_dir, log_dir, secrets_file, mounts (target, site_path, share, user_dir), env */
};

/* The plan's bytes in a new buffer (*len of them), or NULL on OOM or a field over its limit. */
char *bai_wire_plan_write(const struct bai_wire_plan *w, size_t *len);

/* Take `len` bytes apart into w (free w->plan with bai_plan_free, also after a failure). Returns 0, or -1
 * with the first fault in why (BAI_WIRE_WHY_MAX). */
int bai_wire_plan_read(const char *buf, size_t len, struct bai_wire_plan *w, char *why);

#endif
