/* The message buffering and padding that SHA-256 (FIPS 180-4 5.1.1, 5.2.1) and MD5 (RFC 1321 3.1-3.2) share:
 * both hashes eat 64-byte blocks, and end the message with 0x80, zeros up to 56 bytes into a block, then the
 * message length in bits as 8 bytes (big-endian for SHA-256, little-endian for MD5). Each hash keeps its own
 * chaining state and compression function and hands them in; this file only cuts the bytes into blocks.
 * Users: common/sha256.c and the trainer's trainer/src/io/md5.c. */
#ifndef BAI_HASH_BLOCK_H
#define BAI_HASH_BLOCK_H

#include <stddef.h>
#include <stdint.h>

/* A hash's compression function: fold one 64-byte block into its chaining state. */
typedef void bai_hash_compress(uint32_t *state, const uint8_t block[64]);

struct bai_hash_block {
    uint64_t bytes; /* message length so far */
    uint8_t block[64];
    size_t fill; /* bytes pending in block */
};

/* Byte order of the bit length in the last block. */
enum bai_hash_length_order { BAI_HASH_LENGTH_BIG_ENDIAN, BAI_HASH_LENGTH_LITTLE_ENDIAN };

void bai_hash_block_init(struct bai_hash_block *b);
/* Append len bytes of message, compressing each block as it fills. */
void bai_hash_block_feed(struct bai_hash_block *b, uint32_t *state, bai_hash_compress *compress, const void *data,
                         size_t len);
/* Append the padding and the length; state then holds the digest's words. b is spent. */
void bai_hash_block_finish(struct bai_hash_block *b, uint32_t *state, bai_hash_compress *compress,
                           enum bai_hash_length_order order);

#endif
