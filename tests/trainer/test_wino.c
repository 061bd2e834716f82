/* cpu_wino.h's AVX2 Winograd F(4x4, 3x3) against a direct convolution summed in double precision (written
 * here from the definition, independent of oneDNN and of the transforms): the forward pass with bias and
 * ReLU and the input gradient, at the model's shapes and at odd ones (partial tiles, several images); the
 * same bits at 1 and 2 threads; and a kernel that changes between calls (nothing of the last one kept). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#include "cpu/cpu_wino.h"
#include "core/rng.h"


static void fill(float *a, size_t n, uint64_t key)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t w[4];
        rng_block(key, i, w);
        a[i] = (float)w[0] / 4294967296.0f * 2.0f - 1.0f;
    }
}

/* The input value at (b, y, x, c) of a B x H x W x C tensor, 0 outside. */
static double at(const float *x, int H, int W, int C, int b, int y, int xx, int c)
{
    return y < 0 || y >= H || xx < 0 || xx >= W ? 0.0 : x[(((size_t)b * H + y) * W + xx) * C + c];
}

/* y = act(conv(x, k) + bias), k HWIO, in double. */
static void ref_forward(const float *x, int B, int H, int W, int C, int pad, const float *k, const float *bias,
                        int K, int relu, double *y)
{
    const int OH = H + 2 * pad - 2, OW = W + 2 * pad - 2;
    for (int b = 0; b < B; b++)
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++)
                for (int o = 0; o < K; o++) {
                    double s = bias ? bias[o] : 0.0;
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++)
                            for (int c = 0; c < C; c++)
                                s += at(x, H, W, C, b, oy + ky - pad, ox + kx - pad, c) *
                                     k[((ky * 3 + kx) * C + c) * K + o];
                    y[(((size_t)b * OH + oy) * OW + ox) * K + o] = relu && s < 0 ? 0 : s;
                }
}

/* dx = the adjoint of ref_forward's convolution applied to dy, in double. */
static void ref_grad_input(const float *dy, const float *k, int B, int H, int W, int C, int pad, int K, double *dx)
{
    const int OH = H + 2 * pad - 2, OW = W + 2 * pad - 2;
    memset(dx, 0, sizeof *dx * (size_t)B * H * W * C);
    for (int b = 0; b < B; b++)
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++)
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        const int y = oy + ky - pad, xx = ox + kx - pad;
                        if (y < 0 || y >= H || xx < 0 || xx >= W)
                            continue;
                        for (int c = 0; c < C; c++) {
                            double s = 0;
                            for (int o = 0; o < K; o++)
                                s += (double)dy[(((size_t)b * OH + oy) * OW + ox) * K + o] *
                                     k[((ky * 3 + kx) * C + c) * K + o];
                            dx[(((size_t)b * H + y) * W + xx) * C + c] += s;
                        }
                    }
}

/* max |a - ref| / max |ref| */
static double rel_err(const float *a, const double *ref, size_t n)
{
    double worst = 0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) {
        worst = check_max(worst, fabs(a[i] - ref[i]));
        scale = check_max(scale, fabs(ref[i]));
    }
    return worst / scale;
}

/* Winograd's rounding against the double sum: the 1e-6 class of oneDNN's, with room for 576-term sums. */
#define TOL 2e-5

static void check_shape(int B, int H, int W, int C, int pad, int K)
{
    const int OH = H + 2 * pad - 2, OW = W + 2 * pad - 2;
    const size_t nx = (size_t)B * H * W * C, ny = (size_t)B * OH * OW * K, nk = (size_t)9 * C * K;
    float *x = malloc(nx * sizeof *x), *k = malloc(nk * sizeof *k), *bias = malloc(K * sizeof *bias);
    float *y = malloc(ny * sizeof *y), *y2 = malloc(ny * sizeof *y2), *dy = malloc(ny * sizeof *dy);
    float *dx = malloc(nx * sizeof *dx), *dx2 = malloc(nx * sizeof *dx2);
    double *ry = malloc(ny * sizeof *ry), *rdx = malloc(nx * sizeof *rdx);
    fill(x, nx, 1), fill(k, nk, 2), fill(bias, K, 3), fill(dy, ny, 4);
    for (size_t i = 0; i < nk; i++)
        k[i] *= 0.2f; /* Glorot-like scale, so that ReLU cuts about half */
    char what[128];

    for (int relu = 0; relu < 2; relu++) {
        omp_set_num_threads(2);
        cpu_wino_forward(x, B, H, W, C, pad, k, bias, K, relu, y);
        ref_forward(x, B, H, W, C, pad, k, bias, K, relu, ry);
        const double e = rel_err(y, ry, ny);
        snprintf(what, sizeof what, "forward %dx%dx%dx%d pad %d -> %d%s: rel err %.1e", B, H, W, C, pad, K,
                 relu ? " relu" : "", e);
        CHECK(e < TOL, "%s", what);
        omp_set_num_threads(1);
        cpu_wino_forward(x, B, H, W, C, pad, k, bias, K, relu, y2);
        snprintf(what, sizeof what, "  the same bits at 1 and 2 threads");
        CHECK(memcmp(y, y2, ny * sizeof *y) == 0, "%s", what);
    }
    if (pad <= 1 && cpu_wino_shape_ok(K, C)) {
        omp_set_num_threads(2);
        cpu_wino_grad_input(dy, k, B, H, W, C, pad, K, dx);
        ref_grad_input(dy, k, B, H, W, C, pad, K, rdx);
        const double e = rel_err(dx, rdx, nx);
        snprintf(what, sizeof what, "grad_input %dx%dx%dx%d pad %d <- %d: rel err %.1e", B, H, W, C, pad, K, e);
        CHECK(e < TOL, "%s", what);
        omp_set_num_threads(1);
        cpu_wino_grad_input(dy, k, B, H, W, C, pad, K, dx2);
        CHECK(memcmp(dx, dx2, nx * sizeof *dx) == 0, "  the same bits at 1 and 2 threads");
    }
    free(x), free(k), free(bias), free(y), free(y2), free(dy), free(dx), free(dx2), free(ry), free(rdx);
}

/* A kernel changed between two calls of the same shape is the one used. */
static void check_new_kernel(void)
{
    enum { B = 1, H = 8, W = 8, C = 8, K = 16 };
    const size_t nx = (size_t)B * H * W * C, ny = (size_t)B * H * W * K, nk = (size_t)9 * C * K;
    float x[nx], k[nk], y[ny];
    double ry[ny];
    fill(x, nx, 5), fill(k, nk, 6);
    cpu_wino_forward(x, B, H, W, C, 1, k, NULL, K, 0, y);
    fill(k, nk, 7);
    cpu_wino_forward(x, B, H, W, C, 1, k, NULL, K, 0, y);
    ref_forward(x, B, H, W, C, 1, k, NULL, K, 0, ry);
    CHECK(rel_err(y, ry, ny) < TOL, "a new kernel of the same shape is used");
}

int main(void)
{
    if (!cpu_wino_supported()) {
        return check_skip("dep", "this CPU has no AVX2 + FMA, which cpu_wino needs (cpu_conv.c never calls it here)");
    }
    CHECK(cpu_wino_shape_ok(32, 64) && cpu_wino_shape_ok(64, 32) && !cpu_wino_shape_ok(3, 32) &&
               !cpu_wino_shape_ok(32, 8), "channel counts taken: in 8k, out 16k");
    /* the model's layers conv2d_2..4 (forward, and their input gradients), two images */
    check_shape(2, 32, 32, 32, 0, 32);
    check_shape(2, 15, 15, 32, 1, 64);
    check_shape(2, 15, 15, 64, 0, 64);
    /* partial tiles in both directions, several images, a block (12 tiles) split across images, pad 2 */
    check_shape(3, 7, 9, 8, 1, 16);
    check_shape(5, 6, 5, 16, 0, 32);
    check_shape(1, 5, 6, 8, 2, 16);
    check_new_kernel();
    return check_exit("test_wino");
}
