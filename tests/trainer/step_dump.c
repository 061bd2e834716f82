/* step_dump: one full training step (forward, loss, every gradient, RMSprop update) of the model on given
 * weights and inputs, written to a file for tests/trainer/test_step.py to compare against its own numpy
 * implementation. Usage: step_dump OUT.bin
 * File: int32 header {B, n_params}, then float32 arrays in this order: params before, accumulators
 * before, x (B,32,32,3), labels (as float), dropout masks of dropout_1 (B,15,15,32), dropout_2 (B,6,6,64),
 * dropout_3 (B,512) as 0/1, then {lr_t, rho, eps, loss}, gradients, params after, accumulators after,
 * then the inference pass's losses on the params before: each image's alone (B), then the batch's sum. */
#include <stdio.h>
#include <stdlib.h>

#include "core/kernels.h"
#include "core/model.h"
#include "core/optimizer.h"
#include "core/rng.h"

enum { B = 3 };

static void put(FILE *f, const float *p, size_t n) { fwrite(p, sizeof(float), n, f); }

static void put_mask(FILE *f, uint64_t key, size_t n, float rate)
{
    for (size_t i = 0; i < n; i++) {
        float v = dropout_kept(key, i, rate) ? 1.0f : 0.0f;
        put(f, &v, 1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: step_dump OUT.bin\n");
        return 2;
    }
    const struct kernels *k = &kernels_cpu;
    k->set_threads(2);
    struct model m;
    struct rmsprop opt;
    if (model_create(&m, k, B, NULL, NULL) || rmsprop_create(&opt, k, MODEL_NPARAMS, 1e-3, 0.9, 1e-6, 1e-7, NULL))
        return 1;
    float *p = malloc(MODEL_NPARAMS * 4), *a = malloc(MODEL_NPARAMS * 4), *x = malloc(B * 3072 * 4);
    uint8_t labels[B] = {3, 7, 1};
    const uint64_t r = rng_key(5, 0, 0, 0, 77);
    model_init_params(p, 11);
    /* Biases nonzero and accumulators as mid-training, so every term of the update is exercised. */
    for (size_t i = 0; i < MODEL_NPARAMS; i++) {
        a[i] = 1e-4f * rng_uniform(r, i) + 1e-6f;
        if (p[i] == 0.0f)
            p[i] = 0.05f * (rng_uniform(r, MODEL_NPARAMS + i) - 0.5f);
    }
    for (size_t i = 0; i < B * 3072; i++)
        x[i] = rng_uniform(r, 3 * MODEL_NPARAMS + i);
    model_set_params(&m, p);
    k->upload(opt.acc, a, MODEL_NPARAMS * 4);
    opt.iterations = 10;
    const uint64_t dkey = rng_key(3, 1, 2, 0, RNG_DROPOUT);

    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int32_t hdr[2] = {B, MODEL_NPARAMS};
    fwrite(hdr, sizeof hdr, 1, f);
    put(f, p, MODEL_NPARAMS);
    put(f, a, MODEL_NPARAMS);
    put(f, x, B * 3072);
    for (int i = 0; i < B; i++) {
        float l = labels[i];
        put(f, &l, 1);
    }
    for (int i = 0; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i);
        if (L->kind == MODEL_DROPOUT)
            put_mask(f, model_dropout_key(dkey, L->dropout), (size_t)B * L->h * L->w * L->c,
                     model_dropout_rate(L->dropout));
    }

    double loss;
    int correct;
    float infer[B + 1]; /* each image alone (one lane of the engine), then the batch (both threads) */
    for (int i = 0; i <= B; i++) {
        model_clear_sums(&m);
        model_load(&m, i < B ? x + i * 3072 : x, i < B ? labels + i : labels, i < B ? 1 : B);
        model_forward(&m, i < B ? 1 : B, 0);
        model_read_sums(&m, &loss, &correct);
        infer[i] = (float)loss;
    }
    model_clear_sums(&m);
    const float lr_t = rmsprop_lr_t(&opt);
    model_set_step(&m, dkey, lr_t);
    model_load(&m, x, labels, B);
    model_forward(&m, B, 1);
    model_backward(&m, B, NULL, NULL);
    rmsprop_step(&opt, k, m.params, m.grads, &m.step->lr_t);
    model_read_sums(&m, &loss, &correct);
    float scalars[4] = {lr_t, 0.9f, 1e-7f, (float)(loss / B)};
    put(f, scalars, 4);
    k->download(p, m.grads, MODEL_NPARAMS * 4);
    put(f, p, MODEL_NPARAMS);
    model_get_params(&m, p);
    put(f, p, MODEL_NPARAMS);
    k->download(a, opt.acc, MODEL_NPARAMS * 4);
    put(f, a, MODEL_NPARAMS);
    put(f, infer, B + 1);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    rmsprop_destroy(&opt, k);
    model_destroy(&m);
    free(p), free(a), free(x);
    return bad;
}
