/* kernels_cpu: the CPU implementation of kernels.h. Loops are parallelised with OpenMP over independent
 * outputs (images, rows), so results do not depend on the thread count; GEMMs go to cpu_gemm. */
#include "core/kernels.h"
#include "core/optimizer.h"

#include <emmintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_conv.h"
#include "cpu/cpu_gemm.h"
#include "cpu/cpu_infer.h"
#include "core/rng.h"

static void *cpu_alloc(size_t bytes)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (p)
        memset(p, 0, rounded ? rounded : 64);
    return p;
}

static void cpu_release(void *p) { free(p); }

static void cpu_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes)
        memcpy(dst, src, bytes);
}

static void cpu_gemm_any(int transa, int transb, int M, int N, int K, const float *A, int lda, const float *B,
                         int ldb, float beta, float *C, int ldc)
{
    cpu_gemm(CPU_GEMM_AUTO, transa, transb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

static void cpu_bias_act(float *y, const float *bias, size_t rows, int cols, int relu)
{
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++) {
        float *v = y + r * cols;
        if (relu)
            for (int c = 0; c < cols; c++) {
                float t = v[c] + bias[c];
                v[c] = t > 0.0f ? t : 0.0f;
            }
        else
            for (int c = 0; c < cols; c++)
                v[c] += bias[c];
    }
}

/* Column sums go through a fixed number of row chunks whose partial sums are added in chunk order, so the
 * result is the same whatever the thread count. */
enum { GRAD_CHUNKS = 32 };

/* Rows [0, rows) of bias_act_grad, adding the column sums to sum. The ReLU case is written with SSE2 (the
 * x86-64 baseline): the compiler kept the scalar loop, which branched on the sign of every unit and
 * mispredicted often (docs/benchmarks.md, "Figures behind code comments"). */
static void act_grad_rows(float *restrict dy, const float *restrict y, size_t rows, int cols, int relu,
                          float scale, float *restrict sum)
{
    const __m128 vscale = _mm_set1_ps(scale);
    for (size_t r = 0; r < rows; r++) {
        float *restrict d = dy + r * cols;
        const float *restrict v = y + r * cols;
        if (relu) {
            int c = 0;
            for (; c + 4 <= cols; c += 4) {
                const __m128 pos = _mm_cmpgt_ps(_mm_loadu_ps(v + c), _mm_setzero_ps());
                const __m128 g = _mm_and_ps(pos, _mm_mul_ps(_mm_loadu_ps(d + c), vscale));
                _mm_storeu_ps(d + c, g);
                _mm_storeu_ps(sum + c, _mm_add_ps(_mm_loadu_ps(sum + c), g));
            }
            for (; c < cols; c++) {
                const float g = v[c] > 0.0f ? d[c] * scale : 0.0f;
                d[c] = g;
                sum[c] += g;
            }
        } else
            for (int c = 0; c < cols; c++) {
                const float g = d[c] * scale;
                d[c] = g;
                sum[c] += g;
            }
    }
}

static void cpu_bias_act_grad(float *dy, const float *y, size_t rows, int cols, int relu, float scale,
                              float *dbias)
{
    float *partial = calloc((size_t)GRAD_CHUNKS * cols, sizeof(float));
    if (!partial)
        abort(); /* a few KiB; failing here means the process is already lost */
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < GRAD_CHUNKS; ch++) {
        const size_t r0 = rows * ch / GRAD_CHUNKS, r1 = rows * (ch + 1) / GRAD_CHUNKS;
        act_grad_rows(dy + r0 * cols, y + r0 * cols, r1 - r0, cols, relu, scale, partial + (size_t)ch * cols);
    }
    for (int c = 0; c < cols; c++) {
        float s = 0.0f;
        for (int ch = 0; ch < GRAD_CHUNKS; ch++)
            s += partial[(size_t)ch * cols + c];
        dbias[c] = s;
    }
    free(partial);
}

/* The dropout decisions of units [first, first + n) of a layer, n <= DROPOUT_ROW_MAX, as dropout_kept()
 * makes them, with one Philox block (rng.h: eight 16-bit draws) per eight units instead of one per unit. The
 * blocks are all drawn before any is used: they are independent, so the core overlaps their ten dependent
 * rounds instead of waiting on each in turn (its gain: docs/benchmarks.md, "Figures behind code comments"). */
enum { DROPOUT_ROW_MAX = 512 };
static void dropout_row(uint64_t key, size_t first, int n, float rate, uint8_t *restrict kept)
{
    if (n > DROPOUT_ROW_MAX)
        abort(); /* a layer with more than 512 channels: this model has 64 at most */
    uint32_t w[DROPOUT_ROW_MAX / 8 + 2][4];
    const size_t b0 = first >> 3, nb = ((first + (size_t)n + 7) >> 3) - b0;
    for (size_t b = 0; b < nb; b++)
        rng_block(key, b0 + b, w[b]);
    const float threshold = rate * 65536.0f;
    for (int c = 0; c < n; c++) {
        const size_t i = first + (size_t)c;
        kept[c] = (float)dropout_draw(w[(i >> 3) - b0], i) >= threshold;
    }
}

/* Four 0/1 bytes as four 32-bit lanes. */
static inline __m128i bytes_to_lanes(const uint8_t *b)
{
    uint32_t four;
    memcpy(&four, b, 4);
    const __m128i zero = _mm_setzero_si128();
    return _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128((int)four), zero), zero);
}

/* mask ? a : b, lane by lane (SSE2 has no blend). */
static inline __m128 select_ps(__m128 mask, __m128 a, __m128 b)
{
    return _mm_or_ps(_mm_and_ps(mask, a), _mm_andnot_ps(mask, b));
}

/* One output pixel's C channels: max of the 2x2 window (first maximum wins), dropout, argmax record.
 * Four channels at a time with SSE2 (the x86-64 baseline, so no dispatch is needed): the compiler does not
 * vectorise the argmax bookkeeping by itself, and the scalar loop's data-dependent branches mispredicted
 * (docs/benchmarks.md, "Figures behind code comments"). */
static void pool_pixel(const float *restrict q0, const float *restrict q1, const float *restrict q2,
                       const float *restrict q3, const uint8_t *restrict kept, float scale, int C,
                       float *restrict y, uint8_t *restrict idx)
{
    const __m128 vscale = _mm_set1_ps(scale);
    int c = 0;
    for (; c + 4 <= C; c += 4) {
        __m128 m = _mm_loadu_ps(q0 + c), v, gt;
        __m128i arg = _mm_setzero_si128();
        const float *q[3] = {q1, q2, q3};
        for (int k = 0; k < 3; k++) {
            v = _mm_loadu_ps(q[k] + c);
            gt = _mm_cmpgt_ps(v, m);
            m = select_ps(gt, v, m);
            arg = _mm_castps_si128(select_ps(gt, _mm_castsi128_ps(_mm_set1_epi32(k + 1)), _mm_castsi128_ps(arg)));
        }
        const __m128i keep = bytes_to_lanes(kept + c);
        const __m128 keepmask = _mm_castsi128_ps(_mm_cmpgt_epi32(keep, _mm_setzero_si128()));
        _mm_storeu_ps(y + c, _mm_and_ps(keepmask, _mm_mul_ps(m, vscale)));
        const __m128i rec = _mm_or_si128(arg, _mm_slli_epi32(keep, 2));
        const uint32_t four = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(rec, rec), rec));
        memcpy(idx + c, &four, 4);
    }
    for (; c < C; c++) {
        float m = q0[c];
        int arg = 0;
        const float *q[3] = {q1, q2, q3};
        for (int k = 0; k < 3; k++)
            if (q[k][c] > m) {
                m = q[k][c];
                arg = k + 1;
            }
        y[c] = kept[c] ? m * scale : 0.0f;
        idx[c] = (uint8_t)(arg | (kept[c] << 2));
    }
}

/* The gradient under one pooled pixel's 2x2 window: dy * scale at the kept argmax, zero elsewhere. */
static void unpool_pixel(const float *restrict g, const uint8_t *restrict k, float scale, int C,
                         float *restrict d00, float *restrict d01, float *restrict d10, float *restrict d11)
{
    const __m128 vscale = _mm_set1_ps(scale);
    int c = 0;
    for (; c + 4 <= C; c += 4) {
        const __m128 v = _mm_mul_ps(_mm_loadu_ps(g + c), vscale);
        const __m128i rec = bytes_to_lanes(k + c);
        _mm_storeu_ps(d00 + c, _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(rec, _mm_set1_epi32(4))), v));
        _mm_storeu_ps(d01 + c, _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(rec, _mm_set1_epi32(5))), v));
        _mm_storeu_ps(d10 + c, _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(rec, _mm_set1_epi32(6))), v));
        _mm_storeu_ps(d11 + c, _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(rec, _mm_set1_epi32(7))), v));
    }
    for (; c < C; c++) {
        const float v = g[c] * scale;
        d00[c] = k[c] == 4 ? v : 0.0f;
        d01[c] = k[c] == 5 ? v : 0.0f;
        d10[c] = k[c] == 6 ? v : 0.0f;
        d11[c] = k[c] == 7 ? v : 0.0f;
    }
}

/* Inference's pooling (no dropout, no argmax kept for a backward): the window's maximum alone, the same value
 * pool_pixel gives (a later element replaces the maximum only when greater), which GCC turns into MAXPS. */
static void pool_max(const float *x, int B, int H, int W, int C, float *y)
{
    const int OH = H / 2, OW = W / 2;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
                const float *q0 = x + (((size_t)b * H + 2 * oy) * W + 2 * ox) * C, *q1 = q0 + C;
                const float *q2 = q0 + (size_t)W * C, *q3 = q2 + C;
                float *restrict o = y + (((size_t)b * OH + oy) * OW + ox) * C;
                for (int c = 0; c < C; c++) {
                    float m = q0[c];
                    m = q1[c] > m ? q1[c] : m;
                    m = q2[c] > m ? q2[c] : m;
                    o[c] = q3[c] > m ? q3[c] : m;
                }
            }
}

static void cpu_pool_dropout(const float *x, int B, int H, int W, int C, float rate, const uint64_t *keyp,
                             float *y, uint8_t *idx)
{
    const int OH = H / 2, OW = W / 2;
    if (rate <= 0.0f && !idx) {
        pool_max(x, B, H, W, C, y);
        return;
    }
    const uint64_t key = rate > 0.0f ? *keyp : 0;
    const float scale = rate > 0.0f ? 1.0f / (1.0f - rate) : 1.0f;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int oy = 0; oy < OH; oy++) {
            uint8_t kept[C], scratch[C]; /* C is a layer's channel count: 64 at most in this model */
            memset(kept, 1, (size_t)C);
            for (int ox = 0; ox < OW; ox++) {
                const float *p = x + (((size_t)b * H + 2 * oy) * W + 2 * ox) * C;
                const size_t o = (((size_t)b * OH + oy) * OW + ox) * C;
                if (rate > 0.0f)
                    dropout_row(key, o, C, rate, kept);
                pool_pixel(p, p + C, p + (size_t)W * C, p + (size_t)W * C + C, kept, scale, C, y + o,
                           idx ? idx + o : scratch);
            }
        }
}

static void cpu_pool_dropout_grad(const float *dy, const uint8_t *idx, int B, int H, int W, int C, float rate,
                                  float *dx)
{
    const int OH = H / 2, OW = W / 2;
    const float scale = rate > 0.0f ? 1.0f / (1.0f - rate) : 1.0f;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int oy = 0; oy < OH; oy++) {
            /* The two input rows under output row oy; window position k = dy*2+dx, kept when bit 2 is set. */
            float *r0 = dx + ((size_t)b * H + 2 * oy) * W * C, *r1 = r0 + (size_t)W * C;
            const uint8_t *k = idx + ((size_t)b * OH + oy) * OW * C;
            const float *g = dy + ((size_t)b * OH + oy) * OW * C;
            for (int ox = 0; ox < OW; ox++, k += C, g += C) {
                float *d0 = r0 + (size_t)2 * ox * C, *d1 = r1 + (size_t)2 * ox * C;
                unpool_pixel(g, k, scale, C, d0, d0 + C, d1, d1 + C);
            }
            if (W & 1) { /* the odd last column, dropped by the pooling */
                memset(r0 + (size_t)(W - 1) * C, 0, sizeof(float) * C);
                memset(r1 + (size_t)(W - 1) * C, 0, sizeof(float) * C);
            }
        }
    if (H & 1) /* the odd last row of every image */
#pragma omp parallel for schedule(static)
        for (int b = 0; b < B; b++)
            memset(dx + ((size_t)b * H + H - 1) * W * C, 0, sizeof(float) * W * C);
}

static void cpu_dropout(float *x, size_t n, float rate, const uint64_t *keyp)
{
    enum { CHUNK = DROPOUT_ROW_MAX };
    if (rate <= 0.0f)
        return;
    const uint64_t key = *keyp;
    const float scale = 1.0f / (1.0f - rate);
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < n; r += CHUNK) {
        uint8_t kept[CHUNK];
        const int m = n - r < CHUNK ? (int)(n - r) : CHUNK;
        dropout_row(key, r, m, rate, kept);
        for (int c = 0; c < m; c++)
            x[r + c] = kept[c] ? x[r + c] * scale : 0.0f;
    }
}

static void cpu_softmax_xent(const float *logits, const uint8_t *labels, int B, int classes, float *probs,
                             float *dlogits, double *sums)
{
    const float eps = 1e-7f, hi = 1.0f - 1e-7f;
    double loss = 0.0;
    int right = 0;
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * classes;
        float p[classes], q[classes];
        float m = z[0];
        int arg = 0;
        for (int k = 1; k < classes; k++)
            if (z[k] > m) {
                m = z[k];
                arg = k;
            }
        float s = 0.0f;
        for (int k = 0; k < classes; k++)
            s += (p[k] = expf(z[k] - m));
        for (int k = 0; k < classes; k++)
            p[k] /= s;
        /* Keras renormalises the softmax output and clips it before the log. */
        float t = 0.0f;
        for (int k = 0; k < classes; k++)
            t += p[k];
        for (int k = 0; k < classes; k++)
            q[k] = p[k] / t;
        const int y = labels[b];
        const float qy = q[y] < eps ? eps : q[y] > hi ? hi : q[y];
        loss += -log((double)qy);
        right += arg == y;
        if (probs)
            memcpy(probs + (size_t)b * classes, p, sizeof(float) * classes);
        if (dlogits) {
            /* d/dq_y of -log(clip(q_y)) is -1/q_y inside the clip range (ends included, as TF's
             * ClipByValue gradient), 0 outside; then back through q = p / t and the softmax, all divided
             * by B for the batch mean. */
            const float gq = (q[y] >= eps && q[y] <= hi) ? -1.0f / q[y] : 0.0f;
            float dp[classes], dot = 0.0f;
            for (int k = 0; k < classes; k++) {
                dp[k] = ((k == y ? gq : 0.0f) - gq * q[y]) / t;
                dot += dp[k] * p[k];
            }
            float *dz = dlogits + (size_t)b * classes;
            for (int k = 0; k < classes; k++)
                dz[k] = p[k] * (dp[k] - dot) / (float)B;
        }
    }
    sums[0] += loss;
    sums[1] += right;
}

static void cpu_rmsprop(float *p, const float *g, float *a, size_t n, const float *lrp, float rho, float eps)
{
    const float one_minus_rho = 1.0f - rho, lr = *lrp;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++)
        rmsprop_update_one(&p[i], &a[i], g[i], lr, rho, one_minus_rho, eps);
}

static void cpu_set_threads(int n) { cpu_gemm_set_threads(n); }

/* ---- Conv2D: direct convolutions (cpu_conv.h), whose backward reads the layer's input x again, so
 * nothing is saved ---- */
static size_t cpu_conv3x3_saved(int B, int H, int W, int C, int pad)
{
    (void)B, (void)H, (void)W, (void)C, (void)pad;
    return 0;
}

static void cpu_conv3x3_fwd(const float *x, int B, int H, int W, int C, int pad, const float *kernel,
                            const float *bias, int cout, int relu, void *saved, float *y)
{
    (void)saved;
    cpu_conv3x3_forward(x, B, H, W, C, pad, kernel, bias, cout, relu, y);
}

static void cpu_conv3x3_bwd(const float *x, const float *y, float *dy, int B, int H, int W, int C, int pad,
                            const float *kernel, int cout, int relu, float scale, void *saved, float *dkernel,
                            float *dbias, float *dx)
{
    (void)saved;
    const size_t P = (size_t)B * (H + 2 * pad - 2) * (W + 2 * pad - 2);
    cpu_bias_act_grad(dy, y, P, cout, relu, scale, dbias);
    cpu_conv3x3_grad_kernel(x, dy, B, H, W, C, pad, cout, dkernel);
    if (dx)
        cpu_conv3x3_grad_input(dy, kernel, B, H, W, C, pad, cout, dx);
}

/* ---- Dense: GEMMs (cpu_gemm.h) and the bias/activation pass ---- */
static void cpu_dense_forward(const float *x, int B, int in, const float *kernel, const float *bias, int out,
                              int relu, float *y)
{
    cpu_gemm_any(0, 0, B, out, in, x, in, kernel, out, 0.0f, y, out);
    cpu_bias_act(y, bias, (size_t)B, out, relu);
}

static void cpu_dense_backward(const float *x, const float *y, float *dy, int B, int in, const float *kernel,
                               int out, int relu, float scale, float *dkernel, float *dbias, float *dx)
{
    cpu_bias_act_grad(dy, y, (size_t)B, out, relu, scale, dbias);
    cpu_gemm_any(1, 0, in, out, B, x, in, dy, out, 0.0f, dkernel, out);
    if (dx)
        cpu_gemm_any(0, 1, B, in, out, dy, out, kernel, out, 0.0f, dx, in);
}

const struct kernels kernels_cpu = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_copy,
    .download = cpu_copy,
    .set_threads = cpu_set_threads,
    .conv3x3_saved = cpu_conv3x3_saved,
    .conv3x3_forward = cpu_conv3x3_fwd,
    .conv3x3_backward = cpu_conv3x3_bwd,
    .dense_forward = cpu_dense_forward,
    .dense_backward = cpu_dense_backward,
    .pool_dropout_forward = cpu_pool_dropout,
    .pool_dropout_backward = cpu_pool_dropout_grad,
    .dropout_forward = cpu_dropout,
    .softmax_xent = cpu_softmax_xent,
    .rmsprop = cpu_rmsprop,
    .device = 0,
    .infer = &cpu_infer,
};
