#include "run/draws.h"

#include "core/rng.h"

void draw_epoch_order(uint32_t *order, size_t n, size_t first, uint64_t key)
{
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)(first + i);
    for (size_t i = n - 1; n > 0 && i > 0; i--) {
        size_t j = rng_below(key, i, (uint32_t)(i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

void draw_augment(uint64_t key, int n, int h, int w, struct augment_params *out)
{
    for (int i = 0; i < n; i++)
        out[i] = augment_params_from_uniform(rng_uniform(key, 3 * (uint64_t)i), rng_uniform(key, 3 * (uint64_t)i + 1),
                                             rng_uniform(key, 3 * (uint64_t)i + 2), h, w);
}
