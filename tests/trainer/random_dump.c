/* random_dump: the random components of a training run, drawn by the trainer's own code at a fixed seed,
 * written for tests/trainer/test_random.py to check against Keras's definitions. Usage: random_dump OUT.bin
 * File (all little-endian): int32 header {AUG_STEPS, BATCH, DROP_STEPS, ORDER_EPOCHS, ORDER_N, NPARAMS}, then
 *   augmentation: AUG_STEPS*BATCH records of float32 {shift_rows, shift_cols, flip} (epochs of 1000 steps,
 *                 as run_epoch draws them: draw_augment with key (seed, epoch, step, rank 0, RNG_AUGMENT));
 *   dropout:      DROP_STEPS x (B*15*15*32 + B*6*6*64 + B*512) uint8 keep flags, produced by the CPU kernels
 *                 themselves (pool_dropout on ones, dropout on ones) with the keys model_forward uses;
 *   order:        ORDER_EPOCHS x ORDER_N uint32, draw_epoch_order of each epoch;
 *   init:         NPARAMS float32, model_init_params;
 *   streams:      int32 STREAM_KEYS, then STREAM_KEYS x 2 ranks x 5 streams x STREAM_DRAWS float32: the first
 *                 uniforms (rng_uniform) of the augmentation, the three dropout layers' and the shuffle
 *                 streams at coordinates (epoch k, step 0), for ranks 0 and 1, to test that the streams are
 *                 independent of one another and across ranks;
 *   philox:       3 x 4 uint32, rng_philox of Random123's three known-answer inputs for philox4x32_10
 *                 (counter and key all 0; all 1 bits; the digits of pi). */
#include <stdio.h>
#include <stdlib.h>

#include "run/draws.h"
#include "core/kernels.h"
#include "core/model.h"
#include "core/rng.h"

enum { AUG_STEPS = 4000, BATCH = 32, DROP_STEPS = 40, ORDER_EPOCHS = 300, ORDER_N = 5085 };
enum { STREAM_KEYS = 2000, STREAM_DRAWS = 64 };
static const uint64_t SEED = 7;

static int put(FILE *f, const void *p, size_t bytes) { return fwrite(p, 1, bytes, f) != bytes; }

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: random_dump OUT.bin\n");
        return 2;
    }
    const struct kernels *k = &kernels_cpu;
    k->set_threads(1);
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int bad = 0;
    const int32_t hdr[6] = {AUG_STEPS, BATCH, DROP_STEPS, ORDER_EPOCHS, ORDER_N, (int32_t)MODEL_NPARAMS};
    bad |= put(f, hdr, sizeof hdr);

    struct augment_params aug[BATCH];
    for (int s = 0; s < AUG_STEPS; s++) {
        draw_augment(rng_key(SEED, s / 1000, s % 1000, 0, RNG_AUGMENT), BATCH, 32, 32, aug);
        for (int i = 0; i < BATCH; i++) {
            const float rec[3] = {aug[i].shift_rows, aug[i].shift_cols, aug[i].flip ? 1.0f : 0.0f};
            bad |= put(f, rec, sizeof rec);
        }
    }

    const size_t n1 = (size_t)BATCH * 30 * 30 * 32, o1 = (size_t)BATCH * 15 * 15 * 32;
    const size_t n2 = (size_t)BATCH * 13 * 13 * 64, o2 = (size_t)BATCH * 6 * 6 * 64, o3 = (size_t)BATCH * 512;
    float *x1 = malloc(n1 * 4), *y1 = malloc(o1 * 4), *x2 = malloc(n2 * 4), *y2 = malloc(o2 * 4), *h = malloc(o3 * 4);
    uint8_t *i1 = malloc(o1), *i2 = malloc(o2), *keep = malloc(o1 + o2 + o3);
    if (!x1 || !y1 || !x2 || !y2 || !h || !i1 || !i2 || !keep)
        return 1;
    for (size_t i = 0; i < n1; i++)
        x1[i] = 1.0f;
    for (size_t i = 0; i < n2; i++)
        x2[i] = 1.0f;
    for (int s = 0; s < DROP_STEPS; s++) {
        const uint64_t dkey = rng_key(SEED, 0, s, 0, RNG_DROPOUT); /* as run_epoch -> model_set_step */
        /* The layers' keys, as model_set_step derives them (the CPU table reads them from host memory). */
        const uint64_t keys[3] = {model_dropout_key(dkey, 0), model_dropout_key(dkey, 1), model_dropout_key(dkey, 2)};
        k->pool_dropout_forward(x1, BATCH, 30, 30, 32, model_dropout_rate(0), &keys[0], y1, i1);
        k->pool_dropout_forward(x2, BATCH, 13, 13, 64, model_dropout_rate(1), &keys[1], y2, i2);
        for (size_t i = 0; i < o3; i++)
            h[i] = 1.0f;
        k->dropout_forward(h, o3, model_dropout_rate(2), &keys[2]);
        for (size_t i = 0; i < o1; i++)
            keep[i] = y1[i] != 0.0f;
        for (size_t i = 0; i < o2; i++)
            keep[o1 + i] = y2[i] != 0.0f;
        for (size_t i = 0; i < o3; i++)
            keep[o1 + o2 + i] = h[i] != 0.0f;
        bad |= put(f, keep, o1 + o2 + o3);
    }

    uint32_t *order = malloc(ORDER_N * sizeof *order);
    for (int e = 0; e < ORDER_EPOCHS && order; e++) {
        draw_epoch_order(order, ORDER_N, 0, rng_key(SEED, e, 0, 0, RNG_SHUFFLE));
        bad |= put(f, order, ORDER_N * sizeof *order);
    }

    float *params = malloc(MODEL_NPARAMS * sizeof *params);
    if (!order || !params)
        return 1;
    model_init_params(params, SEED);
    bad |= put(f, params, MODEL_NPARAMS * sizeof *params);

    const int32_t keys_n = STREAM_KEYS;
    bad |= put(f, &keys_n, sizeof keys_n);
    for (uint32_t e = 0; e < STREAM_KEYS; e++)
        for (uint32_t rank = 0; rank < 2; rank++) {
            const uint64_t dkey = rng_key(SEED, e, 0, rank, RNG_DROPOUT);
            const uint64_t streams[5] = {rng_key(SEED, e, 0, rank, RNG_AUGMENT), model_dropout_key(dkey, 0),
                                         model_dropout_key(dkey, 1), model_dropout_key(dkey, 2),
                                         rng_key(SEED, e, 0, rank, RNG_SHUFFLE)};
            float u[5][STREAM_DRAWS];
            for (int st = 0; st < 5; st++)
                for (int i = 0; i < STREAM_DRAWS; i++)
                    u[st][i] = rng_uniform(streams[st], (uint64_t)i);
            bad |= put(f, u, sizeof u);
        }
    static const uint32_t kat_ctr[3][4] = {{0, 0, 0, 0},
                                           {~0u, ~0u, ~0u, ~0u},
                                           {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
    static const uint32_t kat_key[3][2] = {{0, 0}, {~0u, ~0u}, {0xa4093822u, 0x299f31d0u}};
    for (int t = 0; t < 3; t++) {
        uint32_t out[4];
        rng_philox(kat_ctr[t], kat_key[t], out);
        bad |= put(f, out, sizeof out);
    }
    bad |= fclose(f) != 0;
    free(x1), free(y1), free(x2), free(y2), free(h), free(i1), free(i2), free(keep), free(order), free(params);
    return bad;
}
