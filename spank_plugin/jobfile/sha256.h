/* SHA-256 (FIPS 180-4) of a buffer, as lowercase hex. The allocator records the digest of the job file it
 * validated; every node compares it with the file it reads, so a file swapped after submission fails the job
 * instead of running unvalidated content. (A digest, not a security boundary: the nodes re-apply every
 * policy to whatever they read.) */
#ifndef BAI_SHA256_H
#define BAI_SHA256_H

#include <stddef.h>

#define BAI_SHA256_HEX_LEN 64

/* Write the 64 hex digits and a NUL into hex[BAI_SHA256_HEX_LEN + 1]. */
void bai_sha256_hex(const void *data, size_t len, char hex[BAI_SHA256_HEX_LEN + 1]);

#endif
