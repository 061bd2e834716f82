/* The CPU table's inference engine (cpu_infer.h) against the row-by-row forward pass of the same table
 * (cpu_conv.h's convolutions and kernels_cpu's poolings, themselves held to numpy by test_step.py, which
 * also checks inference's losses): the features it hands to dense_1 and the loss, for a full batch and a
 * last partial one; the same bits at 1 and 2 threads; and new kernels honoured after a call (the engine
 * reorders them only when they change). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#include "cpu/cpu_conv.h"
#include "cpu/cpu_infer.h"
#include "core/kernels.h"
#include "core/model.h"
#include "core/rng.h"


static double rel_diff(const float *a, const float *b, size_t n)
{
    double worst = 0.0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) {
        worst = check_max(worst, fabs((double)a[i] - b[i]));
        scale = check_max(scale, fabs((double)b[i]));
    }
    return worst / scale;
}

static double loss_of(struct model *m, const float *x, const uint8_t *labels, int B)
{
    double loss;
    int correct;
    model_clear_sums(m);
    model_load(m, x, labels, B);
    model_forward(m, B, 0);
    model_read_sums(m, &loss, &correct);
    return loss;
}

int main(void)
{
    enum { B = 32 };
    int flatten = -1;
    for (int i = 0; i < model_nlayers(); i++)
        if (model_layer(i)->kind == MODEL_FLATTEN)
            flatten = i;
    /* Where conv2d_2's forward runs on our AVX2 Winograd (no AVX-512, or oneDNN held below it), the
     * engine stands aside for the row-by-row pass (cpu_infer.h); test_wino and test_step check that. */
    const int own = cpu_conv3x3_forward_on_wino(32, 32, 32, 0, 32, 1);
    if (own) {
        CHECK(cpu_infer.rows() == 0, "the engine takes no rows where the row-by-row pass has our Winograd");
        check_note("the engine is not used on this CPU");
        return check_exit("test_infer");
    }
    CHECK(cpu_infer.rows() == flatten + 1, "the engine takes the rows up to and with the Flatten");
    const struct model_layer *F = model_layer(flatten);
    const size_t feat = (size_t)F->h * F->w * F->c;

    struct kernels rows_only = kernels_cpu;
    rows_only.infer = NULL;
    struct model eng, ref;
    if (model_create(&eng, &kernels_cpu, B, NULL, NULL) || model_create(&ref, &rows_only, B, NULL, NULL))
        return 1;
    float *p = malloc(MODEL_NPARAMS * sizeof *p), *x = malloc((size_t)B * 3072 * sizeof *x);
    float *one = malloc(B * feat * sizeof *one);
    uint8_t labels[B];
    const uint64_t r = rng_key(9, 0, 0, 0, 77);
    model_init_params(p, 5);
    for (size_t i = 0; i < MODEL_NPARAMS; i++)
        if (p[i] == 0.0f) /* biases: nonzero, so that the engine's are seen to be added */
            p[i] = 0.05f * (rng_uniform(r, i) - 0.5f);
    for (size_t i = 0; i < (size_t)B * 3072; i++)
        x[i] = rng_uniform(r, MODEL_NPARAMS + i);
    for (int i = 0; i < B; i++)
        labels[i] = (uint8_t)(i % MODEL_CLASSES);

    char what[128];
    for (int round = 0; round < 2; round++) {
        model_set_params(&eng, p);
        model_set_params(&ref, p);
        for (int batch = B; batch >= B - 7; batch -= 7) {
            kernels_cpu.set_threads(2);
            const double le = loss_of(&eng, x, labels, batch), lr = loss_of(&ref, x, labels, batch);
            const double d = rel_diff(model_output(&eng, flatten), model_output(&ref, flatten), batch * feat);
            snprintf(what, sizeof what, "%s kernels, batch %d: features within 1e-5 (%.1e)",
                     round ? "changed" : "first", batch, d);
            CHECK(d <= 1e-5, "%s", what);
            snprintf(what, sizeof what, "%s kernels, batch %d: loss within 1e-5 (%.6f, %.6f)",
                     round ? "changed" : "first", batch, le, lr);
            CHECK(fabs(le - lr) <= 1e-5 * fabs(lr), "%s", what);
            memcpy(one, model_output(&eng, flatten), batch * feat * sizeof *one);
            kernels_cpu.set_threads(1);
            loss_of(&eng, x, labels, batch);
            snprintf(what, sizeof what, "%s kernels, batch %d: the same bits at 1 and 2 threads",
                     round ? "changed" : "first", batch);
            CHECK(memcmp(one, model_output(&eng, flatten), batch * feat * sizeof *one) == 0, "%s", what);
        }
        /* New kernels for every convolution, as after a training step: the engine must not keep the old. */
        for (int t = 0; t < model_ntensors(); t++)
            if (model_tensor(t)->rank == 4)
                for (size_t i = 0; i < model_tensor(t)->count; i++)
                    p[model_tensor(t)->offset + i] *= 0.5f + rng_uniform(r, 4 * MODEL_NPARAMS + i);
    }
    model_destroy(&eng);
    model_destroy(&ref);
    free(p), free(x), free(one);
    return check_exit("test_infer");
}
