/* float32 <-> float16 conversion (half.h). Where the CPU has F16C (x86-64 since 2012) eight values at a
 * time with its instructions, chosen once at run time; otherwise, and for the tail, the compiler's
 * _Float16 conversion (GCC's, through libgcc when the target has no instruction for it), which rounds the
 * same way (a call with fewer than eight values takes that path alone). A build without _Float16 converts nothing, and coll_init refuses compression there. */
#include "half.h"

#include <string.h>

#if defined(__FLT16_MANT_DIG__)
#define HAVE_FLOAT16 1
#endif
#if HAVE_FLOAT16 && defined(__x86_64__) && defined(__GNUC__)
#define HAVE_F16C_PATH 1
#include <immintrin.h>
#endif

int coll_half_available(void)
{
#if HAVE_FLOAT16
    return 1;
#else
    return 0;
#endif
}

#if HAVE_FLOAT16
static void to_f16_scalar(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        _Float16 h = (_Float16)src[i];
        memcpy(&dst[i], &h, sizeof h);
    }
}

static void to_f32_scalar(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        _Float16 h;
        memcpy(&h, &src[i], sizeof h);
        dst[i] = (float)h;
    }
}
#endif

#if HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) static size_t to_f16_f16c(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    return i;
}

__attribute__((target("avx,f16c"))) static size_t to_f32_f16c(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    return i;
}

static int has_f16c(void)
{
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx"); /* a load of libgcc's table */
}
#endif

void coll_f32_to_f16(uint16_t *dst, const float *src, size_t n)
{
#if HAVE_FLOAT16
    size_t done = 0;
#if HAVE_F16C_PATH
    if (has_f16c())
        done = to_f16_f16c(dst, src, n);
#endif
    to_f16_scalar(dst + done, src + done, n - done);
#else
    (void)dst, (void)src, (void)n;
#endif
}

void coll_f16_to_f32(float *dst, const uint16_t *src, size_t n)
{
#if HAVE_FLOAT16
    size_t done = 0;
#if HAVE_F16C_PATH
    if (has_f16c())
        done = to_f32_f16c(dst, src, n);
#endif
    to_f32_scalar(dst + done, src + done, n - done);
#else
    (void)dst, (void)src, (void)n;
#endif
}
