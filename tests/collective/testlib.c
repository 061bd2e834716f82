#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>

void test_random_floats(float *x, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        float mant = (float)(s >> 8) / (float)(1u << 24) - 0.5f; /* [-0.5, 0.5) */
        int scale = (int)((s >> 3) % 12) - 6;                    /* magnitudes 2^-6 .. 2^5 */
        x[i] = mant * (float)(scale >= 0 ? (1 << scale) : 1.0 / (1 << -scale));
    }
}

void *test_alloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory for %zu bytes\n", bytes);
        exit(2);
    }
    return p;
}
