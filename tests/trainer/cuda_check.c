/* cuda_check: the CUDA table (kernels_cuda) against the CPU table (kernels_cpu) on random inputs: every
 * layer's forward and backward passes, the model's gradients, a full training step
 * (forward, loss, all 12 gradients, RMSprop update), the input ring with the GPU augmentation against
 * augment.c (the reference) on the same draws, and training steps replayed from a CUDA graph against the
 * same steps launched one by one.
 *
 *   cuda_check [--small]    --small: a smaller model batch, for runs under compute-sanitizer
 *
 * Exit 0 when everything agrees, 1 naming each difference or any CUDA failure, 77 with "SKIP(gpu): ..." only
 * where the machine has no GPU at all (no /dev/nvidia* node): a GPU the runtime cannot use (driver too old,
 * no kernel image for it) is a failure, not a skip. Tolerances: data movement (pooling, dropout, ReLU's gradient) must be
 * bit-identical, because the GPU kernels do the same float operations in the same order; everything that
 * sums in another order or uses another exp (GEMM, bias gradients, softmax) is compared relative to the
 * largest magnitude of the tensor, with a tolerance of a few float roundings per summed term. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#include "input/augment.h"
#include "io/cifar_data.h"
#include "input/input_ring.h"
#include "cuda/kernels_cuda.h"
#include "io/keras_h5.h"
#include "core/rng.h"
#include "run/step_core.h"

static const struct kernels *const CPU = &kernels_cpu, *const GPU = &kernels_cuda;

static void *xmalloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "cuda_check: out of host memory\n");
        exit(1);
    }
    return p;
}

static float *random_floats(size_t n, uint64_t seed, float lo, float hi)
{
    float *p = xmalloc(n * sizeof *p);
    const uint64_t key = rng_key(seed, 0, 0, 0, 99);
    for (size_t i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * rng_uniform(key, i);
    return p;
}

/* A buffer of table k holding a copy of host[0..bytes). */
static void *on(const struct kernels *k, const void *host, size_t bytes)
{
    void *d = k->alloc(bytes);
    if (!d) {
        fprintf(stderr, "cuda_check: %s alloc of %zu bytes failed\n", k->name, bytes);
        exit(1);
    }
    k->upload(d, host, bytes);
    return d;
}

static void *back(const struct kernels *k, const void *dev, size_t bytes)
{
    void *h = xmalloc(bytes);
    k->download(h, dev, bytes);
    return h;
}

/* max |gpu - cpu| / max |cpu| <= tol (tol 0: bit-identical). */
static void compare(const char *what, const float *cpu, const float *gpu, size_t n, double tol)
{
    double scale = 0.0, err = 0.0;
    size_t worst = 0;
    int nan = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)gpu[i] - (double)cpu[i]);
        if (isnan(gpu[i]) != isnan(cpu[i]))
            nan = 1;
        scale = check_max(scale, fabs(cpu[i]));
        if (check_worse(d, err)) {
            err = d;
            worst = i;
        }
    }
    const double rel = scale > 0 ? err / scale : err;
    const int ok = !nan && (tol == 0.0 ? err == 0.0 : rel <= tol);
    check_note("%-44s n=%-8zu max |diff| %.3g (%.3g of max %.3g; limit %s%.0e)", what, n, err, rel, scale,
               tol == 0.0 ? "exact " : "", tol);
    CHECK(ok, "%s: at %zu: cpu %.9g gpu %.9g%s", what, worst, cpu[worst], gpu[worst], nan ? " (NaN mismatch)" : "");
}

static void compare_bytes(const char *what, const uint8_t *cpu, const uint8_t *gpu, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += cpu[i] != gpu[i];
    CHECK(bad == 0, "%s: %zu of %zu bytes differ", what, bad, n);
}

/* One float input on both tables, the same operation applied, one float output compared. */
struct pair {
    float *c, *g;
    size_t n;
};

static struct pair both(const float *host, size_t n)
{
    return (struct pair){on(CPU, host, n * sizeof(float)), on(GPU, host, n * sizeof(float)), n};
}

static struct pair both_random(size_t n, uint64_t seed, float lo, float hi)
{
    float *h = random_floats(n, seed, lo, hi);
    struct pair p = both(h, n);
    free(h);
    return p;
}

static void check_pair(const char *what, struct pair p, double tol)
{
    float *c = back(CPU, p.c, p.n * sizeof(float)), *g = back(GPU, p.g, p.n * sizeof(float));
    compare(what, c, g, p.n, tol);
    free(c);
    free(g);
}

static void drop(struct pair p)
{
    CPU->release(p.c);
    GPU->release(p.g);
}

/* ---- kernels ---- */

static void check_alloc(void)
{
    uint8_t *d = GPU->alloc(1000), *h = xmalloc(1000);
    GPU->download(h, d, 1000);
    size_t nonzero = 0;
    for (int i = 0; i < 1000; i++)
        nonzero += h[i] != 0;
    void *empty = GPU->alloc(0);
    CHECK(!nonzero && empty, "alloc: zero-filled (%zu nonzero bytes), alloc(0) %s", nonzero,
          empty ? "is a buffer" : "returned NULL");
    GPU->release(d);
    GPU->release(empty);
    free(h);
}

static void check_pool(int B, int H, int W, int C)
{
    const size_t nx = (size_t)B * H * W * C, ny = (size_t)B * (H / 2) * (W / 2) * C;
    const float rates[3] = {0.0f, 0.0f, 0.25f};
    for (int v = 0; v < 3; v++) {
        const float rate = rates[v];
        const int with_idx = v > 0; /* inference passes no idx */
        struct pair x = both_random(nx, 14, -1, 1), y = both_random(ny, 15, -1, 1);
        uint8_t *idx_c = with_idx ? CPU->alloc(ny) : NULL, *idx_g = with_idx ? GPU->alloc(ny) : NULL;
        const uint64_t key = rng_key(3, 1, 2, 0, RNG_DROPOUT);
        uint64_t *key_c = on(CPU, &key, sizeof key), *key_g = on(GPU, &key, sizeof key);
        CPU->pool_dropout_forward(x.c, B, H, W, C, rate, key_c, y.c, idx_c);
        GPU->pool_dropout_forward(x.g, B, H, W, C, rate, key_g, y.g, idx_g);
        CPU->release(key_c);
        GPU->release(key_g);
        char what[64];
        snprintf(what, sizeof what, "pool_dropout %dx%dx%dx%d rate %g%s", B, H, W, C, rate, with_idx ? "" : " no idx");
        check_pair(what, y, 0);
        if (with_idx) {
            uint8_t *ic = back(CPU, idx_c, ny), *ig = back(GPU, idx_g, ny);
            snprintf(what, sizeof what, "pool_dropout idx %dx%dx%dx%d rate %g", B, H, W, C, rate);
            compare_bytes(what, ic, ig, ny);
            /* Backward from the CPU's idx on both, so a forward difference cannot hide in it. */
            GPU->upload(idx_g, ic, ny);
            struct pair dy = both_random(ny, 16, -1, 1);
            CPU->pool_dropout_backward(dy.c, idx_c, B, H, W, C, rate, x.c);
            GPU->pool_dropout_backward(dy.g, idx_g, B, H, W, C, rate, x.g);
            snprintf(what, sizeof what, "pool_dropout_grad %dx%dx%dx%d rate %g", B, H, W, C, rate);
            check_pair(what, x, 0);
            drop(dy);
            free(ic), free(ig);
        }
        CPU->release(idx_c);
        GPU->release(idx_g);
        drop(x), drop(y);
    }
}

static void check_dropout(size_t n)
{
    struct pair x = both_random(n, 17, -1, 1);
    const uint64_t key = rng_key(4, 0, 7, 1, RNG_DROPOUT);
    uint64_t *key_c = on(CPU, &key, sizeof key), *key_g = on(GPU, &key, sizeof key);
    CPU->dropout_forward(x.c, n, 0.5f, key_c);
    GPU->dropout_forward(x.g, n, 0.5f, key_g);
    check_pair("dropout rate 0.5", x, 0);
    CPU->dropout_forward(x.c, n, 0.0f, NULL);
    GPU->dropout_forward(x.g, n, 0.0f, NULL);
    check_pair("dropout rate 0 (no-op)", x, 0);
    CPU->release(key_c);
    GPU->release(key_g);
    drop(x);
}

static void check_softmax(int B, float spread)
{
    const int classes = 10;
    struct pair z = both_random((size_t)B * classes, 18, -spread, spread);
    struct pair probs = both_random((size_t)B * classes, 19, 0, 1), dz = both_random((size_t)B * classes, 20, 0, 1);
    uint8_t *labels = xmalloc(B);
    for (int b = 0; b < B; b++)
        labels[b] = (uint8_t)rng_below(rng_key(5, 0, 0, 0, 98), b, classes);
    uint8_t *lc = on(CPU, labels, B), *lg = on(GPU, labels, B);
    const double start[2] = {0.5, 1.0}, zero[2] = {0.0, 0.0}; /* both add to what is there */
    double *sc = on(CPU, start, sizeof start), *sg = on(GPU, start, sizeof start);
    CPU->softmax_xent(z.c, lc, B, classes, probs.c, dz.c, sc);
    GPU->softmax_xent(z.g, lg, B, classes, probs.g, dz.g, sg);
    double got_c[2], got_g[2];
    CPU->download(got_c, sc, sizeof got_c);
    GPU->download(got_g, sg, sizeof got_g);
    const double loss_c = got_c[0], loss_g = got_g[0];
    const int right_c = (int)got_c[1], right_g = (int)got_g[1];
    char what[64];
    snprintf(what, sizeof what, "softmax_xent probs B=%d spread %g", B, spread);
    check_pair(what, probs, 1e-6);
    snprintf(what, sizeof what, "softmax_xent dlogits B=%d spread %g", B, spread);
    check_pair(what, dz, 1e-5);
    const int ok = fabs(loss_g - loss_c) <= 1e-5 * fabs(loss_c) && right_c == right_g;
    CHECK(ok, "softmax_xent loss/correct B=%d spread %g: cpu %.9g / %d, gpu %.9g / %d", B, spread, loss_c, right_c,
          loss_g, right_g);
    /* Inference form: no probs, no dlogits. */
    CPU->upload(sc, zero, sizeof zero);
    GPU->upload(sg, zero, sizeof zero);
    CPU->softmax_xent(z.c, lc, B, classes, NULL, NULL, sc);
    GPU->softmax_xent(z.g, lg, B, classes, NULL, NULL, sg);
    CPU->download(got_c, sc, sizeof got_c);
    GPU->download(got_g, sg, sizeof got_g);
    const double l2c = got_c[0], l2g = got_g[0];
    const int r2c = (int)got_c[1], r2g = (int)got_g[1];
    const int ok2 = fabs(l2g - l2c) <= 1e-5 * fabs(l2c) && r2c == r2g;
    CHECK(ok2, "softmax_xent inference B=%d: cpu %.9g / %d, gpu %.9g / %d", B, l2c, r2c, l2g, r2g);
    CPU->release(lc);
    GPU->release(lg);
    CPU->release(sc);
    GPU->release(sg);
    free(labels);
    drop(z), drop(probs), drop(dz);
}

static void check_rmsprop(size_t n)
{
    struct pair p = both_random(n, 21, -1, 1), gr = both_random(n, 22, -0.01f, 0.01f), a = both_random(n, 23, 0, 1e-4f);
    const float lr = 1e-3f;
    float *lr_c = on(CPU, &lr, sizeof lr), *lr_g = on(GPU, &lr, sizeof lr);
    for (int step = 0; step < 3; step++) {
        CPU->rmsprop(p.c, gr.c, a.c, n, lr_c, 0.9f, 1e-7f);
        GPU->rmsprop(p.g, gr.g, a.g, n, lr_g, 0.9f, 1e-7f);
    }
    check_pair("rmsprop params (3 steps)", p, 1e-6);
    check_pair("rmsprop accumulators (3 steps)", a, 1e-6);
    CPU->release(lr_c);
    GPU->release(lr_g);
    drop(p), drop(gr), drop(a);
}

/* ---- layers ---- */

static void check_conv(int B, int H, int W, int C, int pad, int cout)
{
    const int OH = H + 2 * pad - 2, OW = W + 2 * pad - 2;
    const size_t nx = (size_t)B * H * W * C, ny = (size_t)B * OH * OW * cout;
    struct pair x = both_random(nx, 24, 0, 1), kern = both_random((size_t)9 * C * cout, 25, -0.3f, 0.3f);
    struct pair bias = both_random(cout, 26, -0.1f, 0.1f), y = both_random(ny, 28, 0, 1);
    /* Each table's own saved state (kernels.h), not compared. */
    void *saved_c = CPU->alloc(CPU->conv3x3_saved(B, H, W, C, pad)), *saved_g = GPU->alloc(GPU->conv3x3_saved(B, H, W, C, pad));
    CPU->conv3x3_forward(x.c, B, H, W, C, pad, kern.c, bias.c, cout, 1, saved_c, y.c);
    GPU->conv3x3_forward(x.g, B, H, W, C, pad, kern.g, bias.g, cout, 1, saved_g, y.g);
    char what[80];
    snprintf(what, sizeof what, "conv %s %dx%dx%dx%d->%d forward", pad ? "same" : "valid", B, H, W, C, cout);
    check_pair(what, y, 1e-5);
    /* Backward from the same dy and the CPU's y on both (through ReLU and bias). */
    struct pair dy = both_random(ny, 29, -1, 1), db = both_random(cout, 30, 0, 1);
    struct pair dk = both_random((size_t)9 * C * cout, 31, 0, 1), dx = both_random(nx, 32, 0, 1);
    float *yc = back(CPU, y.c, ny * sizeof(float));
    GPU->upload(y.g, yc, ny * sizeof(float));
    free(yc);
    CPU->conv3x3_backward(x.c, y.c, dy.c, B, H, W, C, pad, kern.c, cout, 1, 1.0f, saved_c, dk.c, db.c, dx.c);
    GPU->conv3x3_backward(x.g, y.g, dy.g, B, H, W, C, pad, kern.g, cout, 1, 1.0f, saved_g, dk.g, db.g, dx.g);
    snprintf(what, sizeof what, "conv %s %dx%dx%dx%d->%d dbias", pad ? "same" : "valid", B, H, W, C, cout);
    check_pair(what, db, 1e-5);
    snprintf(what, sizeof what, "conv %s %dx%dx%dx%d->%d dkernel", pad ? "same" : "valid", B, H, W, C, cout);
    check_pair(what, dk, 1e-5);
    snprintf(what, sizeof what, "conv %s %dx%dx%dx%d->%d dx", pad ? "same" : "valid", B, H, W, C, cout);
    check_pair(what, dx, 1e-5);
    CPU->release(saved_c);
    GPU->release(saved_g);
    drop(x), drop(kern), drop(bias), drop(y), drop(dy), drop(db), drop(dk), drop(dx);
}

/* Dense forward and backward, with and without ReLU and a dropout's scale. Backward starts from the CPU's
 * y on both, so that the ReLU's zeros agree; the activation gradient it leaves in dy must be bit-identical
 * (the same float operations), the sums (GEMMs, the bias gradient's fixed partition) within tolerance. */
static void check_dense(int B, int in, int out)
{
    char what[80];
    for (int relu = 0; relu < 2; relu++)
        for (int s = 0; s < 2; s++) {
            const float scale = s ? 1.0f / 0.75f : 1.0f;
            struct pair x = both_random((size_t)B * in, 33, 0, 1), kern = both_random((size_t)in * out, 34, -0.1f, 0.1f);
            struct pair bias = both_random(out, 35, -0.1f, 0.1f), y = both_random((size_t)B * out, 36, 0, 1);
            CPU->dense_forward(x.c, B, in, kern.c, bias.c, out, relu, y.c);
            GPU->dense_forward(x.g, B, in, kern.g, bias.g, out, relu, y.g);
            snprintf(what, sizeof what, "dense %dx%d->%d relu=%d forward", B, in, out, relu);
            check_pair(what, y, 1e-5);
            float *yc = back(CPU, y.c, (size_t)B * out * sizeof(float));
            GPU->upload(y.g, yc, (size_t)B * out * sizeof(float));
            free(yc);
            struct pair dy = both_random((size_t)B * out, 37, -1, 1), dk = both_random((size_t)in * out, 38, 0, 1);
            struct pair db = both_random(out, 13, -1, 1), dx = both_random((size_t)B * in, 39, 0, 1);
            CPU->dense_backward(x.c, y.c, dy.c, B, in, kern.c, out, relu, scale, dk.c, db.c, dx.c);
            GPU->dense_backward(x.g, y.g, dy.g, B, in, kern.g, out, relu, scale, dk.g, db.g, dx.g);
            snprintf(what, sizeof what, "dense %dx%d->%d relu=%d scale=%g dy", B, in, out, relu, scale);
            check_pair(what, dy, 0);
            snprintf(what, sizeof what, "dense %dx%d->%d relu=%d scale=%g dbias", B, in, out, relu, scale);
            check_pair(what, db, 1e-5);
            snprintf(what, sizeof what, "dense %dx%d->%d relu=%d scale=%g dkernel", B, in, out, relu, scale);
            check_pair(what, dk, 1e-5);
            snprintf(what, sizeof what, "dense %dx%d->%d relu=%d scale=%g dx", B, in, out, relu, scale);
            check_pair(what, dx, 1e-5);
            drop(x), drop(kern), drop(bias), drop(y), drop(dy), drop(dk), drop(db), drop(dx);
        }
}

/* ---- input: the GPU augmentation against augment.c, through the real input ring ---- */

/* B CIFAR images through input_ring_feed (pinned slot, copy stream, events, augment kernel) for several
 * batches in a row (so both slots are reused), each against augment_batch / augment_convert_batch on the
 * host with the same draws: the trainer's draws (augment_params_from_uniform of rng_uniform) and, in the
 * first batch, hand-made extremes (whole-pixel and huge shifts, flips, the [-3.2, 3.2) range's ends). The
 * augmentation is at most a float rounding or two away (FMA contraction), the plain conversion exact. */
static void check_augment(int B, int batches)
{
    const int set_n = 3 * B + 1;
    uint8_t *set = xmalloc((size_t)set_n * CIFAR_IMAGE_BYTES), *labels = xmalloc(B);
    uint32_t *index = xmalloc((size_t)B * sizeof *index);
    struct augment_params *params = xmalloc((size_t)B * sizeof *params);
    float *want = xmalloc((size_t)B * CIFAR_IMAGE_BYTES * sizeof(float));
    for (size_t i = 0; i < (size_t)set_n * CIFAR_IMAGE_BYTES; i++)
        set[i] = (uint8_t)(rng_u64(rng_key(8, 0, 0, 0, 97), i) >> 56);
    struct model m = {.max_batch = B};
    m.x = GPU->alloc((size_t)B * CIFAR_IMAGE_BYTES * sizeof(float));
    m.labels = GPU->alloc(B);
    struct input_ring ring;
    if (!m.x || !m.labels || input_ring_create(&ring, GPU->input, GPU, B) != 0) {
        fprintf(stderr, "cuda_check: out of memory for the input ring at batch %d\n", B);
        exit(1);
    }
    static const struct augment_params extremes[] = {
        {0, 0, 0}, {0, 0, 1}, {1, 0, 0}, {0, -1, 1}, {3.2f, -3.2f, 0}, {-3.19999f, 3.19999f, 1}, {40, -40, 1}, {0.5f, 0.25f, 1},
    };
    for (int n = 0; n < batches; n++) {
        const uint64_t key = rng_key(4, 1, (uint32_t)n, 0, RNG_AUGMENT);
        for (int i = 0; i < B; i++) {
            index[i] = rng_below(key, 1000 + (uint64_t)i, (uint32_t)set_n);
            labels[i] = (uint8_t)(index[i] % 10);
            params[i] = n == 0 && i < (int)(sizeof extremes / sizeof *extremes)
                            ? extremes[i]
                            : augment_params_from_uniform(rng_uniform(key, 3 * (uint64_t)i), rng_uniform(key, 3 * (uint64_t)i + 1),
                                                          rng_uniform(key, 3 * (uint64_t)i + 2), CIFAR_H, CIFAR_W);
        }
        const int aug = n != 1; /* batch 1: --no-augmentation's conversion */
        const int fed = input_ring_feed(&ring, set, index, labels, B, aug ? params : NULL, &m) == 0;
        CHECK(fed, "input_ring_feed refused batch %d", n);
        if (!fed)
            continue;
        if (aug)
            augment_batch(set, index, B, params, want);
        else
            augment_convert_batch(set, index, B, want);
        float *got = back(GPU, m.x, (size_t)B * CIFAR_IMAGE_BYTES * sizeof(float));
        uint8_t *got_labels = back(GPU, m.labels, B);
        char what[96];
        snprintf(what, sizeof what, "input ring B=%d batch %d %s", B, n, aug ? "augment" : "convert");
        compare(what, want, got, (size_t)B * CIFAR_IMAGE_BYTES, aug ? 1e-6 : 0.0);
        compare_bytes("input ring labels", labels, got_labels, B);
        free(got), free(got_labels);
    }
    input_ring_destroy(&ring);
    GPU->release(m.x);
    GPU->release(m.labels);
    free(set), free(labels), free(index), free(params), free(want);
}

/* ---- the model: one full training step ---- */

static void check_step(int B)
{
    const double lr = 1e-4;
    struct step_core c, g;
    if (step_core_create(&c, CPU, B, lr, 1) != 0 || step_core_create(&g, GPU, B, lr, 1) != 0) {
        fprintf(stderr, "cuda_check: out of memory for the model at batch %d\n", B);
        exit(1);
    }
    float *params = xmalloc(MODEL_NPARAMS * sizeof(float));
    model_init_params(params, 11);
    model_set_params(&c.model, params);
    model_set_params(&g.model, params);
    float *x = random_floats((size_t)B * 32 * 32 * 3, 40, 0, 1);
    uint8_t *labels = xmalloc(B);
    for (int b = 0; b < B; b++)
        labels[b] = (uint8_t)rng_below(rng_key(6, 0, 0, 0, 98), b, MODEL_CLASSES);
    const uint64_t dkey = rng_key(7, 0, 3, 0, RNG_DROPOUT);
    double loss_c, loss_g;
    int right_c, right_g;
    model_load(&c.model, x, labels, B);
    model_load(&g.model, x, labels, B);
    step_core_step(&c, B, dkey);
    step_core_step(&g, B, dkey);
    model_read_sums(&c.model, &loss_c, &right_c);
    model_read_sums(&g.model, &loss_g, &right_g);
    const int ok = fabs(loss_g - loss_c) <= 1e-5 * fabs(loss_c) && right_c == right_g;
    CHECK(ok, "step B=%d loss/correct: cpu %.9g / %d, gpu %.9g / %d", B, loss_c, right_c, loss_g, right_g);
    float *gc = back(CPU, c.model.grads, MODEL_NPARAMS * sizeof(float));
    float *gg = back(GPU, g.model.grads, MODEL_NPARAMS * sizeof(float));
    for (int t = 0; t < model_ntensors(); t++) {
        char what[96];
        const struct model_tensor *mt = model_tensor(t);
        snprintf(what, sizeof what, "step B=%d gradient of %s/%s", B, mt->layer, mt->weight);
        compare(what, gc + mt->offset, gg + mt->offset, mt->count, 1e-4);
    }
    /* After the update: RMSprop's first step moves each weight by about lr*sqrt(10) whatever the size of
     * its gradient, so a gradient that is tiny and noisy on either side may move its weight somewhat
     * differently; a wrong gradient moves it the other way (2*lr*sqrt(10)). Limit: lr/4 per weight. */
    float *pc = back(CPU, c.model.params, MODEL_NPARAMS * sizeof(float));
    float *pg = back(GPU, g.model.params, MODEL_NPARAMS * sizeof(float));
    double worst = 0;
    size_t at = 0, moved = 0;
    for (size_t i = 0; i < MODEL_NPARAMS; i++) {
        double d = fabs((double)pc[i] - pg[i]);
        moved += pc[i] != params[i];
        if (check_worse(d, worst))
            worst = d, at = i;
    }
    const int ok2 = worst <= lr / 4;
    check_note("step B=%d weights after RMSprop: max |diff| %.3g at %zu (limit %.3g), %zu of %zu moved on the CPU", B,
               worst, at, lr / 4, moved, (size_t)MODEL_NPARAMS);
    CHECK(ok2, "step B=%d weights after RMSprop: max |diff| %.3g at %zu over the limit %.3g", B, worst, at, lr / 4);
    free(gc), free(gg), free(pc), free(pg), free(params), free(x), free(labels);
    step_core_destroy(&c);
    step_core_destroy(&g);
}

/* ---- CUDA graphs: replayed steps against the same steps launched one by one ---- */

/* Ten steps on two GPU step cores, graphs on and off, with fresh inputs, dropout keys and (decay 0.05) a
 * learning rate that changes every step, so that a replay frozen on its captured values shows. Sizes b, B:
 * b's warm-up, capture and replay; B invalidates b's graph (and grows the scratch buffers), warms up,
 * captures, replays; a partial batch b runs uncaptured between two replays of B. Both cores run the same
 * kernels in the same order on the same buffers' contents, so they must agree bit for bit. */
static void check_graph(int B)
{
    const int b = B - 3, sizes[10] = {b, b, b, b, B, B, B, B, b, B};
    struct step_core plain, graph;
    if (step_core_create(&plain, GPU, B, 1e-3, 1) != 0 || step_core_create(&graph, GPU, B, 1e-3, 1) != 0) {
        fprintf(stderr, "cuda_check: out of memory for the model at batch %d\n", B);
        exit(1);
    }
    step_core_set_graphs(&plain, 0);
    plain.opt.decay = graph.opt.decay = 0.05;
    float *params = xmalloc(MODEL_NPARAMS * sizeof(float));
    model_init_params(params, 12);
    model_set_params(&plain.model, params);
    model_set_params(&graph.model, params);
    uint8_t *labels = xmalloc(B);
    int captured = 0;
    for (int s = 0; s < 10; s++) {
        float *x = random_floats((size_t)sizes[s] * 32 * 32 * 3, 50 + s, 0, 1);
        for (int i = 0; i < sizes[s]; i++)
            labels[i] = (uint8_t)rng_below(rng_key(8, 0, s, 0, 98), i, MODEL_CLASSES);
        const uint64_t dkey = rng_key(9, 0, s, 0, RNG_DROPOUT);
        model_load(&plain.model, x, labels, sizes[s]);
        model_load(&graph.model, x, labels, sizes[s]);
        step_core_step(&plain, sizes[s], dkey);
        step_core_step(&graph, sizes[s], dkey);
        captured += graph.graph != NULL;
        free(x);
    }
    /* A graph exists after steps 3-4 (b's) and 7-10 (B's, kept over the partial batch): 6. */
    const int ok = captured == 6 && graph.opt.iterations == plain.opt.iterations;
    CHECK(ok, "graph B=%d/%d: a graph existed after %d of 10 steps (6 expected), iterations %llu / %llu", b, B,
          captured, (unsigned long long)plain.opt.iterations, (unsigned long long)graph.opt.iterations);
    double lp, lg;
    int rp, rg;
    model_read_sums(&plain.model, &lp, &rp);
    model_read_sums(&graph.model, &lg, &rg);
    const int ok2 = lp == lg && rp == rg;
    CHECK(ok2, "graph B=%d/%d loss/correct over 10 steps: plain %.17g / %d, graph %.17g / %d", b, B, lp, rp, lg, rg);
    float *pp = back(GPU, plain.model.params, MODEL_NPARAMS * sizeof(float));
    float *pg = back(GPU, graph.model.params, MODEL_NPARAMS * sizeof(float));
    compare("graph vs plain: weights after 10 steps", pp, pg, MODEL_NPARAMS, 0);
    free(pp), free(pg);
    pp = back(GPU, plain.opt.acc, MODEL_NPARAMS * sizeof(float));
    pg = back(GPU, graph.opt.acc, MODEL_NPARAMS * sizeof(float));
    compare("graph vs plain: RMSprop accumulators", pp, pg, MODEL_NPARAMS, 0);
    free(pp), free(pg), free(params), free(labels);
    step_core_destroy(&plain);
    step_core_destroy(&graph);
}

/* kernels_cuda_describe: the name cifar-train prints for each rank's GPU carries a UUID in nvidia-smi's form
 * (GPU-8-4-4-4-12 hex digits, which test_cuda.sh finds in `nvidia-smi -L`) and a PCI bus id
 * (domain:bus:device.function); an ordinal past the visible GPUs is refused with CUDA's reason. */
static void check_describe(int count)
{
    char out[512], uuid[64] = "", bus[64] = "";
    const int named = kernels_cuda_describe(0, out, sizeof out) == 0;
    CHECK(named, "describe: device 0: %s", out);
    if (!named)
        return;
    printf("describe: device 0: %s\n", out);
    const char *u = strstr(out, ", GPU-"), *p = strstr(out, ", PCI ");
    unsigned dom, b, dev, fn;
    char end;
    int ok = u && p && sscanf(u + 2, "%63[^,]", uuid) == 1 && sscanf(p + 6, "%63s", bus) == 1 &&
             strlen(uuid) == 40 && strspn(uuid + 4, "0123456789abcdef-") == 36 && uuid[12] == '-' &&
             uuid[17] == '-' && uuid[22] == '-' && uuid[27] == '-' &&
             sscanf(bus, "%x:%x:%x.%x%c", &dom, &b, &dev, &fn, &end) == 4;
    CHECK(ok, "describe: '%s' has no GPU-<uuid> and PCI <domain:bus:device.function>", out);
    CHECK(kernels_cuda_describe(count, out, sizeof out) != 0, "describe: device %d of %d is named: %s", count, count,
          out);
}

int main(int argc, char **argv)
{
    const int small = argc > 1 && strcmp(argv[1], "--small") == 0;
    char why[256];
    if (kernels_cuda_device_count(why, sizeof why) == 0) {
        glob_t nodes;
        const int none = glob("/dev/nvidia*", 0, NULL, &nodes) != 0;
        if (!none)
            globfree(&nodes);
        if (none)
            return check_skip("gpu", "no /dev/nvidia* (%s)", why);
        printf("cuda_check: FAILED: /dev/nvidia* exists but %s\n", why);
        return 1;
    }
    if (kernels_cuda_open(0, why, sizeof why) != 0) {
        fprintf(stderr, "cuda_check: %s\n", why);
        return 1;
    }
    kernels_cpu.set_threads(2);
    check_describe(kernels_cuda_device_count(why, sizeof why));
    check_alloc();
    check_dense(1000, 5, 37); /* the bias gradient: several row chunks, a partial column block */
    check_dense(3, 5, 600);   /* many column blocks, one short chunk */
    check_dense(small ? 2048 : 32768, 3, 32);
    check_pool(3, 7, 9, 5); /* odd sizes: the last row and column are dropped */
    check_pool(2, 30, 30, 32);
    check_dropout(1001);
    check_softmax(33, 5.0f);
    check_softmax(7, 60.0f); /* saturated: the clip at 1e-7 / 1 - 1e-7 */
    check_rmsprop(10007);
    check_conv(3, 9, 8, 4, 1, 6);
    check_conv(3, 9, 8, 4, 0, 6);
    check_conv(2, 32, 32, 3, 1, 32);
    check_dense(5, 300, 17);
    check_augment(small ? 9 : 32, 5);
    check_step(small ? 2 : 32);
    if (!small)
        check_step(7);
    check_graph(small ? 5 : 32);
    kernels_cuda_close();
    return check_exit("cuda_check");
}
