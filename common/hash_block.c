/* Block buffering and padding of SHA-256 and MD5: see hash_block.h. */
#include "hash_block.h"

#include <string.h>

void bai_hash_block_init(struct bai_hash_block *b)
{
    b->bytes = 0;
    b->fill = 0;
}

void bai_hash_block_feed(struct bai_hash_block *b, uint32_t *state, bai_hash_compress *compress, const void *data,
                         size_t len)
{
    const uint8_t *p = data;
    b->bytes += len;
    while (len > 0) {
        size_t take = 64 - b->fill < len ? 64 - b->fill : len;
        memcpy(b->block + b->fill, p, take);
        b->fill += take;
        p += take;
        len -= take;
        if (b->fill == 64) {
            compress(state, b->block);
            b->fill = 0;
        }
    }
}

void bai_hash_block_finish(struct bai_hash_block *b, uint32_t *state, bai_hash_compress *compress,
                           enum bai_hash_length_order order)
{
    static const uint8_t pad[64] = {0x80};
    const uint64_t bits = b->bytes * 8;
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(bits >> (order == BAI_HASH_LENGTH_BIG_ENDIAN ? 56 - 8 * i : 8 * i));
    /* The 0x80 terminator and zeros up to 56 bytes into a block, then the bit length. */
    bai_hash_block_feed(b, state, compress, pad, b->fill < 56 ? 56 - b->fill : 120 - b->fill);
    bai_hash_block_feed(b, state, compress, len, 8);
}
