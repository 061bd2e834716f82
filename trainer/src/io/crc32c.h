/* crc32c: CRC-32C (Castagnoli, the iSCSI polynomial), as TFRecord frames TensorBoard's event files, and its
 * "masked" form (TensorFlow's crc32c::Mask) that a record stores.
 *
 * Bitwise, without a table: the event writer checksums a few hundred bytes per epoch. Debian 12 packages
 * no C library for CRC-32C alone (isa-l's crc32_iscsi would add a run-time library for these few lines). */
#ifndef TRAINER_CRC32C_H
#define TRAINER_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(const void *data, size_t len);

/* ((crc >> 15) | (crc << 17)) + 0xa282ead8: TFRecord's masked CRC of `data`. */
uint32_t crc32c_masked(const void *data, size_t len);

#endif
