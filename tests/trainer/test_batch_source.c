/* The batch source's host path (input/batch_source.h, the CPU table): a batch loaded through it is in the
 * model's input, bit for bit what augment.c makes of the same images and draws (augment_batch, or
 * augment_convert_batch without draws), with its labels; index NULL takes the first B images; a batch
 * larger than the model's is refused and leaves the input as it was. (The device path, the input ring, is
 * checked against augment.c by cuda_check on a GPU.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#include "core/kernels.h"
#include "core/model.h"
#include "core/rng.h"
#include "input/augment.h"
#include "input/batch_source.h"
#include "io/cifar_data.h"

enum { SET = 9, MAX_B = 4 };


int main(void)
{
    static uint8_t set[SET * CIFAR_IMAGE_BYTES], set_labels[SET];
    static float want[MAX_B * CIFAR_IMAGE_BYTES];
    const uint32_t index[MAX_B] = {7, 2, 2, 5};
    uint8_t labels[MAX_B];
    struct augment_params params[MAX_B];
    for (size_t i = 0; i < sizeof set; i++)
        set[i] = (uint8_t)(rng_u64(rng_key(3, 0, 0, 0, 97), i) >> 56);
    for (int i = 0; i < SET; i++)
        set_labels[i] = (uint8_t)(i % MODEL_CLASSES);
    for (int b = 0; b < MAX_B; b++) {
        const uint64_t key = rng_key(3, 1, 0, 0, RNG_AUGMENT);
        params[b] = augment_params_from_uniform(rng_uniform(key, 3 * (uint64_t)b), rng_uniform(key, 3 * (uint64_t)b + 1),
                                                rng_uniform(key, 3 * (uint64_t)b + 2), CIFAR_H, CIFAR_W);
        labels[b] = set_labels[index[b]];
    }
    struct model m;
    struct batch_source src;
    if (model_create(&m, &kernels_cpu, MAX_B, NULL, NULL) != 0 || batch_source_create(&src, &m) != 0) {
        fprintf(stderr, "test_batch_source: out of memory\n");
        return 1;
    }
    const size_t floats = (size_t)MAX_B * CIFAR_IMAGE_BYTES;

    CHECK(batch_source_load(&src, set, index, labels, MAX_B, params) == 0, "augmented batch accepted");
    augment_batch(set, index, MAX_B, params, want);
    CHECK(memcmp(m.x, want, floats * sizeof(float)) == 0, "augmented batch in m->x, as augment_batch makes it");
    CHECK(memcmp(m.labels, labels, MAX_B) == 0, "its labels in m->labels");

    CHECK(batch_source_load(&src, set, index, labels, 3, NULL) == 0, "plain batch of 3 accepted");
    augment_convert_batch(set, index, 3, want);
    CHECK(memcmp(m.x, want, 3 * CIFAR_IMAGE_BYTES * sizeof(float)) == 0,
          "plain batch in m->x, as augment_convert_batch makes it");

    CHECK(batch_source_load(&src, set + CIFAR_IMAGE_BYTES, NULL, set_labels + 1, 2, NULL) == 0, "index NULL accepted");
    augment_convert(set + CIFAR_IMAGE_BYTES, 2 * CIFAR_IMAGE_BYTES, want);
    CHECK(memcmp(m.x, want, 2 * CIFAR_IMAGE_BYTES * sizeof(float)) == 0 && memcmp(m.labels, set_labels + 1, 2) == 0,
          "index NULL: the first B images of the set and their labels");

    float *before = malloc(floats * sizeof(float));
    memcpy(before, m.x, floats * sizeof(float));
    const uint32_t big[MAX_B + 1] = {0, 1, 2, 3, 4};
    uint8_t big_labels[MAX_B + 1] = {0};
    CHECK(batch_source_load(&src, set, big, big_labels, MAX_B + 1, NULL) != 0, "a batch larger than the model refused");
    CHECK(memcmp(m.x, before, floats * sizeof(float)) == 0, "the refused batch left the input as it was");

    free(before);
    batch_source_destroy(&src);
    model_destroy(&m);
    return check_exit("test_batch_source");
}
