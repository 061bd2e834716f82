/* Finite-difference checks of every layer's backward (kernels.h) on small random shapes: conv 3x3 same
 * and valid (input, kernel, bias), dense, dense + ReLU, max-pool (odd sizes) with and without dropout,
 * inverted dropout after a dense + ReLU, and the Keras softmax cross-entropy including its clipping.
 * Each check takes L = sum(r * y) for a fixed random r (or the loss itself) and compares the backward's
 * dL/dv with (L(v + h) - L(v - h)) / 2h, computed in double from the float forward. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#include "core/kernels.h"
#include "core/rng.h"

static const struct kernels *K = &kernels_cpu;
static uint64_t draw_counter;

static float urand(float lo, float hi)
{
    return lo + (hi - lo) * rng_uniform(rng_key(42, 0, 0, 0, 99), draw_counter++);
}

static float *rnd(size_t n, float lo, float hi)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = urand(lo, hi);
    return p;
}

/* The function under test: fills y (ny values) from the current inputs. */
typedef void (*forward_fn)(void *ctx, float *y);

static double weighted(const float *y, const float *r, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)y[i] * r[i];
    return s;
}

/* Compare analytic[i] with the central difference of sum(r * f()) w.r.t. v[i], for every i. */
static void check(const char *name, forward_fn f, void *ctx, float *v, size_t nv, const float *analytic,
                  const float *r, size_t ny, float h, double tol)
{
    float *y = malloc(ny * sizeof *y);
    double worst = 0.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < nv; i++) {
        const float keep = v[i];
        v[i] = keep + h;
        f(ctx, y);
        double lp = weighted(y, r, ny);
        v[i] = keep - h;
        f(ctx, y);
        double lm = weighted(y, r, ny);
        v[i] = keep;
        double num = (lp - lm) / (2.0 * h), err = fabs(num - analytic[i]) / fmax(1.0, fabs(num));
        if (check_worse(err, worst)) {
            worst = err;
            worst_i = i;
        }
    }
    f(ctx, y);
    free(y);
    check_note("%-32s %6zu values  worst error %.2e at %zu", name, nv, worst, worst_i);
    CHECK(worst <= tol, "%s: worst error %.2e at %zu, tolerance %.1e", name, worst, worst_i, tol);
}

/* ---- convolution ---- */
struct conv_ctx {
    int B, H, W, C, pad, cout;
    float *x, *w, *b;
    void *saved;
};

static void conv_fwd(void *vc, float *y)
{
    struct conv_ctx *c = vc;
    K->conv3x3_forward(c->x, c->B, c->H, c->W, c->C, c->pad, c->w, c->b, c->cout, 0, c->saved, y);
}

static void test_conv(int pad)
{
    struct conv_ctx c = {2, 5, 4, 3, pad, 4, NULL, NULL, NULL, NULL};
    const int OH = c.H + 2 * pad - 2, OW = c.W + 2 * pad - 2;
    const size_t nx = (size_t)c.B * c.H * c.W * c.C, nw = (size_t)9 * c.C * c.cout, P = (size_t)c.B * OH * OW,
                 ny = P * c.cout;
    c.x = rnd(nx, -1, 1);
    c.w = rnd(nw, -1, 1);
    c.b = rnd(c.cout, -1, 1);
    c.saved = K->alloc(K->conv3x3_saved(c.B, c.H, c.W, c.C, pad));
    float *r = rnd(ny, -1, 1), *y = malloc(ny * sizeof(float)), *dy = malloc(ny * sizeof(float));
    float *dx = malloc(nx * sizeof(float)), *dw = malloc(nw * sizeof(float)), *db = malloc(c.cout * sizeof(float));
    conv_fwd(&c, y);
    memcpy(dy, r, ny * sizeof(float));
    K->conv3x3_backward(c.x, y, dy, c.B, c.H, c.W, c.C, pad, c.w, c.cout, 0, 1.0f, c.saved, dw, db, dx);
    char name[64];
    snprintf(name, sizeof name, "conv3x3 %s: input", pad ? "same" : "valid");
    check(name, conv_fwd, &c, c.x, nx, dx, r, ny, 0.05f, 1e-3);
    snprintf(name, sizeof name, "conv3x3 %s: kernel", pad ? "same" : "valid");
    check(name, conv_fwd, &c, c.w, nw, dw, r, ny, 0.05f, 1e-3);
    snprintf(name, sizeof name, "conv3x3 %s: bias", pad ? "same" : "valid");
    check(name, conv_fwd, &c, c.b, c.cout, db, r, ny, 0.05f, 1e-3);
    free(c.x), free(c.w), free(c.b), K->release(c.saved), free(r), free(y), free(dy), free(dx), free(dw), free(db);
}

/* ---- dense ---- */
struct dense_ctx {
    int B, in, out;
    float *x, *w, *b;
};

static void dense_fwd(void *vc, float *y)
{
    struct dense_ctx *c = vc;
    K->dense_forward(c->x, c->B, c->in, c->w, c->b, c->out, 0, y);
}

static void test_dense(void)
{
    struct dense_ctx c = {3, 7, 5, NULL, NULL, NULL};
    const size_t nx = (size_t)c.B * c.in, nw = (size_t)c.in * c.out, ny = (size_t)c.B * c.out;
    c.x = rnd(nx, -1, 1);
    c.w = rnd(nw, -1, 1);
    c.b = rnd(c.out, -1, 1);
    float *r = rnd(ny, -1, 1), *y = malloc(ny * 4), *dy = malloc(ny * 4), *dx = malloc(nx * 4), *dw = malloc(nw * 4),
          *db = malloc(c.out * 4);
    dense_fwd(&c, y);
    memcpy(dy, r, ny * 4);
    K->dense_backward(c.x, y, dy, c.B, c.in, c.w, c.out, 0, 1.0f, dw, db, dx);
    check("dense: input", dense_fwd, &c, c.x, nx, dx, r, ny, 0.05f, 1e-3);
    check("dense: kernel", dense_fwd, &c, c.w, nw, dw, r, ny, 0.05f, 1e-3);
    check("dense: bias", dense_fwd, &c, c.b, c.out, db, r, ny, 0.05f, 1e-3);
    free(c.x), free(c.w), free(c.b), free(r), free(y), free(dy), free(dx), free(dw), free(db);
}

/* ---- dense + ReLU, then optional inverted dropout in place (the dense_1 -> dropout_3 pattern) ---- */
struct act_ctx {
    int rows, cols;
    float rate;
    float *x, *eye, *b;
};

static void act_fwd(void *vc, float *y)
{
    struct act_ctx *c = vc;
    K->dense_forward(c->x, c->rows, c->cols, c->eye, c->b, c->cols, 1, y);
    static const uint64_t key = 1234;
    K->dropout_forward(y, (size_t)c->rows * c->cols, c->rate, &key);
}

static void test_act(float rate)
{
    struct act_ctx c = {6, 8, rate, NULL, NULL, NULL};
    const size_t n = (size_t)c.rows * c.cols;
    /* An identity kernel, so that the ReLU's inputs are x + bias: values at least 0.05 from ReLU's kink
     * (bias is 0 +- 0.01) so that h = 0.01 never crosses it. */
    c.eye = calloc((size_t)c.cols * c.cols, sizeof(float));
    for (int i = 0; i < c.cols; i++)
        c.eye[i * c.cols + i] = 1.0f;
    c.x = rnd(n, 0.05f, 1);
    for (size_t i = 0; i < n; i += 2)
        c.x[i] = -c.x[i];
    c.b = rnd(c.cols, -0.01f, 0.01f);
    float *r = rnd(n, -1, 1), *y = malloc(n * 4), *dy = malloc(n * 4), *db = malloc(c.cols * 4), *dx = malloc(n * 4),
          *dw = malloc((size_t)c.cols * c.cols * 4);
    act_fwd(&c, y);
    memcpy(dy, r, n * 4);
    K->dense_backward(c.x, y, dy, c.rows, c.cols, c.eye, c.cols, 1, rate > 0 ? 1.0f / (1.0f - rate) : 1.0f, dw, db,
                      dx);
    check(rate > 0 ? "relu + dropout 0.5: input" : "relu: input", act_fwd, &c, c.x, n, dx, r, n, 0.01f, 1e-3);
    check(rate > 0 ? "relu + dropout 0.5: bias" : "relu: bias", act_fwd, &c, c.b, c.cols, db, r, n, 0.01f, 1e-3);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        kept += y[i] != 0.0f;
    check_note("  (%zu of %zu units nonzero)", kept, n);
    free(c.x), free(c.eye), free(c.b), free(r), free(y), free(dy), free(db), free(dx), free(dw);
}

/* ---- max-pool + dropout ---- */
struct pool_ctx {
    int B, H, W, C;
    float rate;
    float *x;
    uint8_t *idx;
};

static void pool_fwd(void *vc, float *y)
{
    struct pool_ctx *c = vc;
    static const uint64_t key = 777;
    K->pool_dropout_forward(c->x, c->B, c->H, c->W, c->C, c->rate, &key, y, c->idx);
}

static void test_pool(float rate)
{
    struct pool_ctx c = {2, 5, 7, 3, rate, NULL, NULL};
    const size_t nx = (size_t)c.B * c.H * c.W * c.C, ny = (size_t)c.B * (c.H / 2) * (c.W / 2) * c.C;
    /* Distinct values 0.05 apart (a shuffled ramp), so h = 0.01 never changes an argmax. */
    c.x = malloc(nx * 4);
    for (size_t i = 0; i < nx; i++)
        c.x[i] = 0.05f * (float)i;
    for (size_t i = nx - 1; i > 0; i--) {
        size_t j = rng_below(5, i, (uint32_t)(i + 1));
        float t = c.x[i];
        c.x[i] = c.x[j];
        c.x[j] = t;
    }
    c.idx = malloc(ny);
    float *r = rnd(ny, -1, 1), *y = malloc(ny * 4), *dx = malloc(nx * 4);
    pool_fwd(&c, y);
    K->pool_dropout_backward(r, c.idx, c.B, c.H, c.W, c.C, rate, dx);
    check(rate > 0 ? "maxpool 2x2 + dropout 0.25" : "maxpool 2x2 (5x7 input)", pool_fwd, &c, c.x, nx, dx, r, ny,
          0.01f, 1e-3);
    free(c.x), free(c.idx), free(r), free(y), free(dx);
}

/* Inference's pooling (rate 0, no argmax record: the model's forward when not training) against the window
 * maximum computed here, on values with ties (whole numbers drawn from 0..7). */
static void test_pool_inference(void)
{
    const int B = 2, H = 7, W = 6, C = 37, OH = H / 2, OW = W / 2;
    const size_t nx = (size_t)B * H * W * C, ny = (size_t)B * OH * OW * C;
    float *x = malloc(nx * 4), *y = malloc(ny * 4);
    for (size_t i = 0; i < nx; i++)
        x[i] = (float)rng_below(11, i, 8);
    K->pool_dropout_forward(x, B, H, W, C, 0.0f, NULL, y, NULL);
    int bad = 0;
    for (int b = 0; b < B; b++)
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++)
                for (int c = 0; c < C; c++) {
                    float m = -1.0f;
                    for (int k = 0; k < 4; k++)
                        m = fmaxf(m, x[(((size_t)b * H + 2 * oy + k / 2) * W + 2 * ox + k % 2) * C + c]);
                    bad += y[(((size_t)b * OH + oy) * OW + ox) * C + c] != m;
                }
    CHECK(bad == 0, "maxpool 2x2 at inference (no argmax, 7x6x37 input with ties): %d of %zu outputs differ", bad,
          ny);
    free(x), free(y);
}

/* ---- softmax cross-entropy ---- */
struct xent_ctx {
    int B, classes;
    float *z;
    uint8_t *labels;
};

static void xent_fwd(void *vc, float *y)
{
    struct xent_ctx *c = vc;
    double sums[2] = {0.0, 0.0};
    K->softmax_xent(c->z, c->labels, c->B, c->classes, NULL, NULL, sums);
    y[0] = (float)(sums[0] / c->B);
}

static void test_xent(void)
{
    struct xent_ctx c = {4, 10, NULL, NULL};
    const size_t n = (size_t)c.B * c.classes;
    c.z = rnd(n, -3, 3);
    uint8_t labels[4] = {3, 0, 9, 5};
    c.labels = labels;
    /* Row 3: its label's probability is far below 1e-7, so Keras's clip stops the gradient through it. */
    c.z[3 * 10 + 5] = -40.0f;
    float one = 1.0f, *dz = malloc(n * 4);
    double sums[2] = {0.0, 0.0};
    K->softmax_xent(c.z, c.labels, c.B, c.classes, NULL, dz, sums);
    check("softmax cross-entropy: logits", xent_fwd, &c, c.z, n, dz, &one, 1, 1e-2f, 2e-3);
    double clipped = 0.0;
    for (int k = 0; k < 10; k++)
        clipped += fabs(dz[30 + k]);
    const double row3 = -log((double)1e-7f);
    struct xent_ctx one_row = {1, 10, c.z + 30, labels + 3};
    float l3;
    xent_fwd(&one_row, &l3);
    CHECK(clipped == 0.0 && fabs(l3 - row3) <= 1e-4, "clipped row: loss %.6f (expected %.6f), |gradient| %.1e", l3,
          row3, clipped);
    free(c.z), free(dz);
}

int main(void)
{
    K->set_threads(2);
    test_conv(1);
    test_conv(0);
    test_dense();
    test_act(0.0f);
    test_act(0.5f);
    test_pool(0.0f);
    test_pool(0.25f);
    test_pool_inference();
    test_xent();
    return check_exit("test_layers");
}
