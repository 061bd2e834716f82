/* md5: RFC 1321 message digest, only to check the downloaded CIFAR-10 archive against its published sum
 * (not for anything security-related). Incremental: init, update any number of times, final. */
#ifndef TRAINER_MD5_H
#define TRAINER_MD5_H

#include <stddef.h>
#include <stdint.h>

#include "hash_block.h" /* the 64-byte blocks and padding SHA-256 shares */

struct md5_ctx {
    uint32_t state[4];
    struct bai_hash_block in;
};

void md5_init(struct md5_ctx *c);
void md5_update(struct md5_ctx *c, const void *data, size_t len);
void md5_final(struct md5_ctx *c, uint8_t digest[16]);

#endif
