/* The one float32 sum both allreduce paths use (reduce.h). Compiled at -O3 (module.mk), so that it
 * vectorises. */
#include "reduce.h"

void coll_sum_f32(float *own, const float *const *part, int n, size_t len, float divide)
{
    for (int i = 1; i < n; i++) {
        const float *a = i == 1 ? part[0] : own, *b = part[i];
        if (i == n - 1 && divide != 0)
            for (size_t k = 0; k < len; k++)
                own[k] = (a[k] + b[k]) / divide;
        else
            for (size_t k = 0; k < len; k++)
                own[k] = a[k] + b[k];
    }
}

