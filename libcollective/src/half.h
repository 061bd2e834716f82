/* Leaf: float32 <-> IEEE binary16 (float16) conversion for compressed allreduces (half.c). Rounding is to
 * nearest, ties to even, as numpy's float16 and the F16C instructions do: a float32 beyond float16's range
 * (|x| >= 65520) becomes an infinity of its sign, one below half the smallest subnormal (2^-25) a zero of
 * its sign, infinities stay infinities and every NaN stays a NaN (quiet; its payload is not kept). */
#ifndef COLL_HALF_H
#define COLL_HALF_H

#include <stddef.h>
#include <stdint.h>

int coll_half_available(void); /* 0 when this build has no float16 conversion (no _Float16) */
void coll_f32_to_f16(uint16_t *dst, const float *src, size_t n);
void coll_f16_to_f32(float *dst, const uint16_t *src, size_t n);

#endif
