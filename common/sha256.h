/* SHA-256 (FIPS 180-4), the project's one implementation, pure C with no dependency. Its users:
 * - the plugin: the allocator records the digest of the job file it validated; every node compares it with the
 *   file it reads, so a file swapped after submission fails the job instead of running unvalidated content;
 * - the trainer: data files checked against a SHA256SUMS file, and checkpoints
 *   carrying a checksum of their arrays.
 * Both are integrity checks against damage or change, not a defence against someone who can rewrite the
 * recorded digest too. Incremental: init, update any number of times, then final. */
#ifndef BAI_SHA256_H
#define BAI_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "hash_block.h"

#define BAI_SHA256_HEX_LEN 64

struct bai_sha256 {
    uint32_t state[8];
    struct bai_hash_block in;
};

void bai_sha256_init(struct bai_sha256 *c);
void bai_sha256_update(struct bai_sha256 *c, const void *data, size_t len);
/* Finish: the digest as 64 lowercase hex digits and a NUL. */
void bai_sha256_final_hex(struct bai_sha256 *c, char hex[BAI_SHA256_HEX_LEN + 1]);
/* The digest of one buffer, the same way. */
void bai_sha256_hex(const void *data, size_t len, char hex[BAI_SHA256_HEX_LEN + 1]);

#endif
