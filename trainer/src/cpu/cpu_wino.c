#include "cpu/cpu_wino.h"

#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpu_wino_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

int cpu_wino_shape_ok(int cin, int cout)
{
    return cin > 0 && cout > 0 && cin % 8 == 0 && cout % 16 == 0;
}

/* Everything below is compiled for AVX2 + FMA and runs only where cpu_wino_supported() (cpu_conv.c asks
 * before calling), so the build needs no -march; the two functions above are plain x86-64. */
#pragma GCC target("avx2,fma")

/* TB tiles per block: a block's transformed inputs (36 x TB x C floats) and products (36 x TB x cout)
 * stay in the L2 cache for C, cout <= 64 (221 KB together at 64); TB is a multiple of the GEMM kernel's
 * MR rows. The kernel keeps MR x NR outputs in 12 of the 16 ymm registers. */
enum { TILE = 4, ALPHA = 6, NPOS = ALPHA * ALPHA, MR = 6, NR = 16, TB = 12 };

/* The module's scratch, grown on demand: the transformed kernels (NPOS x C x cout), a kernel turned and
 * swapped for grad_input, and per thread one block's V and M. */
static struct {
    float *u, *turned, *blocks;
    size_t u_floats, turned_floats, blocks_floats;
} scratch;

static float *grow(float **buf, size_t *have, size_t want)
{
    if (want <= *have)
        return *buf;
    free(*buf);
    /* zeroed: the GEMM reads the rows of a last, partial block that no tile wrote (their results are never
     * used; zeros keep them from being NaNs or denormals) */
    *buf = aligned_alloc(64, (want * sizeof(float) + 63) / 64 * 64);
    if (!*buf) {
        fprintf(stderr, "cifar-train: cpu_wino: out of memory for %zu floats of scratch\n", want);
        exit(1);
    }
    memset(*buf, 0, want * sizeof(float));
    *have = want;
    return *buf;
}

/* B^T x of F(4x4, 3x3) over six vectors x[0], x[s], ..., x[5s] (a column or row of a 6x6 tile). */
static inline void input_1d(const __m256 *x, int s, __m256 *y, int ys)
{
    const __m256 four = _mm256_set1_ps(4.0f), mfour = _mm256_set1_ps(-4.0f), mfive = _mm256_set1_ps(-5.0f);
    const __m256 two = _mm256_set1_ps(2.0f);
    const __m256 x0 = x[0], x1 = x[s], x2 = x[2 * s], x3 = x[3 * s], x4 = x[4 * s], x5 = x[5 * s];
    const __m256 a = _mm256_fmadd_ps(mfour, x2, x4);            /* x4 - 4 x2 */
    const __m256 b = _mm256_fmadd_ps(mfour, x1, x3);            /* x3 - 4 x1 */
    const __m256 c = _mm256_sub_ps(x4, x2);
    const __m256 e = _mm256_mul_ps(two, _mm256_sub_ps(x3, x1)); /* 2 (x3 - x1) */
    y[0] = _mm256_fmadd_ps(four, x0, _mm256_fmadd_ps(mfive, x2, x4));
    y[ys] = _mm256_add_ps(a, b);
    y[2 * ys] = _mm256_sub_ps(a, b);
    y[3 * ys] = _mm256_add_ps(c, e);
    y[4 * ys] = _mm256_sub_ps(c, e);
    y[5 * ys] = _mm256_fmadd_ps(four, x1, _mm256_fmadd_ps(mfive, x3, x5));
}

/* A^T m of F(4x4, 3x3): six vectors to four. */
static inline void output_1d(const __m256 *m, int s, __m256 *o, int os)
{
    const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f), eight = _mm256_set1_ps(8.0f);
    const __m256 s12 = _mm256_add_ps(m[s], m[2 * s]), d12 = _mm256_sub_ps(m[s], m[2 * s]);
    const __m256 s34 = _mm256_add_ps(m[3 * s], m[4 * s]), d34 = _mm256_sub_ps(m[3 * s], m[4 * s]);
    o[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
    o[os] = _mm256_fmadd_ps(two, d34, d12);
    o[2 * os] = _mm256_fmadd_ps(four, s34, s12);
    o[3 * os] = _mm256_add_ps(_mm256_fmadd_ps(eight, d34, d12), m[5 * s]);
}

/* G g of F(4x4, 3x3): three vectors to six. */
static inline void kernel_1d(const __m256 *g, int s, __m256 *w, int ws)
{
    const __m256 g0 = g[0], g1 = g[s], g2 = g[2 * s];
    const __m256 q = _mm256_set1_ps(0.25f), sixth = _mm256_set1_ps(-1.0f / 6.0f);
    const __m256 c24 = _mm256_set1_ps(1.0f / 24.0f), c12 = _mm256_set1_ps(1.0f / 12.0f);
    const __m256 c6 = _mm256_set1_ps(1.0f / 6.0f);
    const __m256 s02 = _mm256_add_ps(g0, g2);
    const __m256 even = _mm256_fmadd_ps(c24, g0, _mm256_mul_ps(c6, g2)); /* g0/24 + g2/6 */
    w[0] = _mm256_mul_ps(q, g0);
    w[ws] = _mm256_mul_ps(sixth, _mm256_add_ps(s02, g1));
    w[2 * ws] = _mm256_mul_ps(sixth, _mm256_sub_ps(s02, g1));
    w[3 * ws] = _mm256_fmadd_ps(c12, g1, even);
    w[4 * ws] = _mm256_fnmadd_ps(c12, g1, even);
    w[5 * ws] = g2;
}

/* u[p][c][k] = (G g G^T)[p] for the kernel g[ky][kx][c][k] (HWIO, C x K), 8 output channels at a time. */
static void transform_kernel(const float *g, int C, int K, float *u)
{
#pragma omp for schedule(static)
    for (int ck = 0; ck < C * K / 8; ck++) {
        const int c = ck / (K / 8), k = ck % (K / 8) * 8;
        __m256 in[9], t[18], w[NPOS];
        for (int i = 0; i < 9; i++)
            in[i] = _mm256_loadu_ps(g + ((size_t)i * C + c) * K + k);
        for (int j = 0; j < 3; j++) /* columns: G g, 6 x 3 */
            kernel_1d(in + j, 3, t + j, 3);
        for (int i = 0; i < ALPHA; i++) /* rows: (G g) G^T, 6 x 6 */
            kernel_1d(t + 3 * i, 1, w + ALPHA * i, 1);
        for (int p = 0; p < NPOS; p++)
            _mm256_storeu_ps(u + ((size_t)p * C + c) * K + k, w[p]);
    }
}

/* The geometry of one call: a convolution of x (B x H x W x C, zero outside) padded by pad, into y (B x OH x
 * OW x K), its tiles numbered image by image, row by row. */
struct conv {
    const float *x;
    int B, H, W, C, pad, K, relu;
    int OH, OW, tiles_y, tiles_x, tiles;
    const float *u, *bias;
    float *y;
};

/* v[p][t][c] for the tiles [first, first + n) of the block. */
static void transform_input(const struct conv *cv, int first, int n, float *v)
{
    const int C = cv->C, per_image = cv->tiles_y * cv->tiles_x;
    for (int t = 0; t < n; t++) {
        const int tile = first + t, b = tile / per_image, ty = tile % per_image / cv->tiles_x,
                  tx = tile % cv->tiles_x;
        const int y0 = ty * TILE - cv->pad, x0 = tx * TILE - cv->pad;
        /* rows and columns of the 6x6 window inside the image */
        const int i0 = y0 < 0 ? -y0 : 0, i1 = cv->H - y0 < ALPHA ? cv->H - y0 : ALPHA;
        const int j0 = x0 < 0 ? -x0 : 0, j1 = cv->W - x0 < ALPHA ? cv->W - x0 : ALPHA;
        const float *img = cv->x + (size_t)b * cv->H * cv->W * C;
        for (int c = 0; c < C; c += 8) {
            __m256 d[NPOS], tmp[NPOS], r[NPOS];
            for (int i = 0; i < ALPHA; i++)
                for (int j = 0; j < ALPHA; j++)
                    d[i * ALPHA + j] = i >= i0 && i < i1 && j >= j0 && j < j1
                                           ? _mm256_loadu_ps(img + ((size_t)(y0 + i) * cv->W + x0 + j) * C + c)
                                           : _mm256_setzero_ps();
            for (int j = 0; j < ALPHA; j++) /* columns: B^T d */
                input_1d(d + j, ALPHA, tmp + j, ALPHA);
            for (int i = 0; i < ALPHA; i++) /* rows: (B^T d) B */
                input_1d(tmp + ALPHA * i, 1, r + ALPHA * i, 1);
            for (int p = 0; p < NPOS; p++)
                _mm256_store_ps(v + ((size_t)p * TB + t) * C + c, r[p]);
        }
    }
}

/* m[MR x NR] = v[MR x C] u[C x NR] (row strides C, K, K): the 6x16 FMA kernel. */
static inline void gemm_kernel(const float *v, const float *u, int C, int K, float *m)
{
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00;
    __m256 a30 = a00, a31 = a00, a40 = a00, a41 = a00, a50 = a00, a51 = a00;
    for (int c = 0; c < C; c++) {
        const __m256 u0 = _mm256_load_ps(u + (size_t)c * K), u1 = _mm256_load_ps(u + (size_t)c * K + 8);
        __m256 b = _mm256_broadcast_ss(v + c);
        a00 = _mm256_fmadd_ps(b, u0, a00), a01 = _mm256_fmadd_ps(b, u1, a01);
        b = _mm256_broadcast_ss(v + C + c);
        a10 = _mm256_fmadd_ps(b, u0, a10), a11 = _mm256_fmadd_ps(b, u1, a11);
        b = _mm256_broadcast_ss(v + 2 * C + c);
        a20 = _mm256_fmadd_ps(b, u0, a20), a21 = _mm256_fmadd_ps(b, u1, a21);
        b = _mm256_broadcast_ss(v + 3 * C + c);
        a30 = _mm256_fmadd_ps(b, u0, a30), a31 = _mm256_fmadd_ps(b, u1, a31);
        b = _mm256_broadcast_ss(v + 4 * C + c);
        a40 = _mm256_fmadd_ps(b, u0, a40), a41 = _mm256_fmadd_ps(b, u1, a41);
        b = _mm256_broadcast_ss(v + 5 * C + c);
        a50 = _mm256_fmadd_ps(b, u0, a50), a51 = _mm256_fmadd_ps(b, u1, a51);
    }
    _mm256_store_ps(m, a00), _mm256_store_ps(m + 8, a01);
    _mm256_store_ps(m + K, a10), _mm256_store_ps(m + K + 8, a11);
    _mm256_store_ps(m + 2 * K, a20), _mm256_store_ps(m + 2 * K + 8, a21);
    _mm256_store_ps(m + 3 * K, a30), _mm256_store_ps(m + 3 * K + 8, a31);
    _mm256_store_ps(m + 4 * K, a40), _mm256_store_ps(m + 4 * K + 8, a41);
    _mm256_store_ps(m + 5 * K, a50), _mm256_store_ps(m + 5 * K + 8, a51);
}

/* m[p] = v[p] u[p] for the 36 positions, rows [0, rows) of the block (a multiple of MR). */
static void multiply(const struct conv *cv, const float *v, int rows, float *m)
{
    const int C = cv->C, K = cv->K;
    for (int p = 0; p < NPOS; p++)
        for (int k = 0; k < K; k += NR)
            for (int r = 0; r < rows; r += MR)
                gemm_kernel(v + ((size_t)p * TB + r) * C, cv->u + (size_t)p * C * K + k, C, K,
                            m + ((size_t)p * TB + r) * K + k);
}

/* y for the tiles [first, first + n): A^T m A, plus the bias, through the ReLU when relu. */
static void transform_output(const struct conv *cv, int first, int n, const float *m)
{
    const int K = cv->K, per_image = cv->tiles_y * cv->tiles_x;
    for (int t = 0; t < n; t++) {
        const int tile = first + t, b = tile / per_image, ty = tile % per_image / cv->tiles_x,
                  tx = tile % cv->tiles_x;
        const int y0 = ty * TILE, x0 = tx * TILE;
        const int rows = cv->OH - y0 < TILE ? cv->OH - y0 : TILE, cols = cv->OW - x0 < TILE ? cv->OW - x0 : TILE;
        float *out = cv->y + (size_t)b * cv->OH * cv->OW * K;
        for (int k = 0; k < K; k += 8) {
            __m256 mm[NPOS], tmp[TILE * ALPHA], o[TILE * TILE];
            for (int p = 0; p < NPOS; p++)
                mm[p] = _mm256_load_ps(m + ((size_t)p * TB + t) * K + k);
            for (int j = 0; j < ALPHA; j++) /* columns: A^T m, 4 x 6 */
                output_1d(mm + j, ALPHA, tmp + j, ALPHA);
            for (int i = 0; i < TILE; i++) /* rows: (A^T m) A, 4 x 4 */
                output_1d(tmp + ALPHA * i, 1, o + TILE * i, 1);
            const __m256 bias = cv->bias ? _mm256_loadu_ps(cv->bias + k) : _mm256_setzero_ps();
            const __m256 zero = _mm256_setzero_ps();
            for (int i = 0; i < rows; i++)
                for (int j = 0; j < cols; j++) {
                    __m256 val = _mm256_add_ps(o[i * TILE + j], bias);
                    if (cv->relu)
                        val = _mm256_max_ps(val, zero);
                    _mm256_storeu_ps(out + ((size_t)(y0 + i) * cv->OW + x0 + j) * K + k, val);
                }
        }
    }
}

/* The convolution of x (C channels, padded by pad) with the HWIO kernel g (C x K) into y. */
static void convolve(const float *x, int B, int H, int W, int C, int pad, const float *g, const float *bias, int K,
                     int relu, float *y)
{
    struct conv cv = {.x = x, .B = B, .H = H, .W = W, .C = C, .pad = pad, .K = K, .relu = relu, .bias = bias,
                      .y = y};
    cv.OH = H + 2 * pad - 2, cv.OW = W + 2 * pad - 2;
    cv.tiles_y = (cv.OH + TILE - 1) / TILE, cv.tiles_x = (cv.OW + TILE - 1) / TILE;
    cv.tiles = B * cv.tiles_y * cv.tiles_x;
    cv.u = grow(&scratch.u, &scratch.u_floats, (size_t)NPOS * C * K);
    const int threads = omp_get_max_threads();
    const size_t per_thread = (size_t)NPOS * TB * ((size_t)C + K);
    float *blocks = grow(&scratch.blocks, &scratch.blocks_floats, per_thread * (size_t)threads);
    const int nblocks = (cv.tiles + TB - 1) / TB;
#pragma omp parallel num_threads(threads)
    {
        transform_kernel(g, C, K, (float *)cv.u); /* an omp for: every thread waits for the whole of u */
        float *v = blocks + per_thread * (size_t)omp_get_thread_num(), *m = v + (size_t)NPOS * TB * C;
#pragma omp for schedule(static)
        for (int blk = 0; blk < nblocks; blk++) {
            const int first = blk * TB, n = cv.tiles - first < TB ? cv.tiles - first : TB;
            transform_input(&cv, first, n, v);
            multiply(&cv, v, (n + MR - 1) / MR * MR, m);
            transform_output(&cv, first, n, m);
        }
    }
}

void cpu_wino_forward(const float *x, int B, int H, int W, int C, int pad, const float *kernel, const float *bias,
                      int cout, int relu, float *y)
{
    convolve(x, B, H, W, C, pad, kernel, bias, cout, relu, y);
}

void cpu_wino_grad_input(const float *dy, const float *kernel, int B, int H, int W, int C, int pad, int cout,
                         float *dx)
{
    /* turned[ky][kx][k][c] = kernel[2 - ky][2 - kx][c][k]: a cout -> C kernel */
    float *turned = grow(&scratch.turned, &scratch.turned_floats, (size_t)9 * C * cout);
    for (int i = 0; i < 9; i++)
        for (int c = 0; c < C; c++)
            for (int k = 0; k < cout; k++)
                turned[((size_t)i * cout + k) * C + c] = kernel[((size_t)(8 - i) * C + c) * cout + k];
    const int OH = H + 2 * pad - 2, OW = W + 2 * pad - 2;
    convolve(dy, B, OH, OW, cout, 2 - pad, turned, NULL, C, 0, dx);
}
