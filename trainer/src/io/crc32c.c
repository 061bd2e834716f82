#include "io/crc32c.h"

#define CRC32C_POLY 0x82f63b78u /* 0x1edc6f41 bit-reversed */

uint32_t crc32c(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (CRC32C_POLY & (0u - (crc & 1u)));
    }
    return ~crc;
}

uint32_t crc32c_masked(const void *data, size_t len)
{
    const uint32_t crc = crc32c(data, len);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
