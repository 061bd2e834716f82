/* sha256: FIPS 180-4 SHA-256, to check data files against a SHA256SUMS file and to give checkpoints a
 * checksum of their arrays (integrity against damage, not a defence against an attacker who can rewrite
 * the checksum too). Incremental: init, update any number of times, final. */
#ifndef TRAINER_SHA256_H
#define TRAINER_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256_ctx {
    uint32_t state[8];
    uint64_t bytes; /* total length so far */
    uint8_t block[64];
    size_t fill; /* bytes pending in block */
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
void sha256_final(struct sha256_ctx *c, uint8_t digest[32]);
/* The digest as 64 lowercase hex digits plus NUL. */
void sha256_hex(const uint8_t digest[32], char hex[65]);

#endif
