/* kernels_cuda: the CUDA table of kernels.h (contract in kernels_cuda.h). Each kernel follows the function
 * of the same name in kernels_cpu.c; comments here say only where and why the GPU version differs. */
#include "cuda/kernels_cuda.h"

#include "cuda/cuda_plugin.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/image.h"
#include "core/input_engine.h"
#include "core/rng.h"

namespace {

struct state {
    int device = -1; /* -1: not open */
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;
    /* Scratch, grown on demand: bias_act_grad's per-chunk column sums; softmax_xent's per-row loss and
     * correctness. `generation` counts the moves, so that a graph knows when its addresses are stale. */
    float *partial = nullptr;
    size_t partial_cap = 0;
    double *row_loss = nullptr;
    int *row_right = nullptr;
    size_t rows_cap = 0;
    unsigned generation = 0;
    /* cuBLAS's workspace, ours rather than its pool: a captured GEMM must not allocate. */
    void *blas_workspace = nullptr;
    /* Stream capture in progress (graph_engine); the first failure inside it, reported by capture_end. */
    bool capturing = false;
    char capture_failure[256] = "";
    /* The input ring's copy stream and per-slot events (input_ring.h): `arrived` recorded on the copy
     * stream after a slot's upload, `consumed` on the compute stream after its last reader. */
    cudaStream_t copy = nullptr;
    cudaEvent_t arrived[INPUT_RING_SLOTS] = {}, consumed[INPUT_RING_SLOTS] = {};
};
state g;

[[noreturn]] void fatal(const char *call, const char *why)
{
    fprintf(stderr, "kernels_cuda: %s failed: %s\n", call, why);
    exit(EXIT_FAILURE);
}

/* Inside a capture a failure is remembered, not fatal: nothing has run yet, and capture_end's caller runs
 * the same calls again uncaptured, where a real error is fatal as usual. */
void failed(const char *call, const char *why)
{
    if (!g.capturing)
        fatal(call, why);
    if (!g.capture_failure[0])
        snprintf(g.capture_failure, sizeof g.capture_failure, "%s: %s", call, why);
}

void check(cudaError_t e, const char *call)
{
    if (e != cudaSuccess)
        failed(call, cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char *call)
{
    if (s != CUBLAS_STATUS_SUCCESS)
        failed(call, cublasGetStatusString(s));
}

#define CHECK(call) check((call), #call)
/* After a launch: catches a bad configuration at once (faults inside kernels surface at the next sync). */
#define LAUNCHED(name) check(cudaGetLastError(), name)

void require_open(void)
{
    if (g.device < 0)
        fatal("kernels_cuda", "the table is used before kernels_cuda_open()");
}

/* Kernels index elements with 32-bit integers (64-bit division is several times slower); the model's
 * largest tensor at batch 256 is 66M elements, so 2^31 allows batches of about 8000. */
constexpr int THREADS = 256;

unsigned count32(size_t n, const char *what)
{
    if (n > (size_t)INT_MAX) {
        char why[128];
        snprintf(why, sizeof why, "%zu elements, more than 2^31-1 (use a smaller batch)", n);
        fatal(what, why);
    }
    return (unsigned)n;
}

unsigned blocks(unsigned n) { return (n + THREADS - 1) / THREADS; }

/* ---- memory ---- */

void *cuda_alloc(size_t bytes)
{
    require_open();
    const size_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64;
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* not sticky: clear it so later calls do not report it */
        return nullptr;
    }
    CHECK(e);
    /* On the table's stream: a cudaMemset on the legacy stream would not be ordered before our kernels. */
    CHECK(cudaMemsetAsync(p, 0, rounded, g.stream));
    return p;
}

void cuda_release(void *p)
{
    if (p)
        CHECK(cudaFree(p)); /* cudaFree waits for the work that may still use p */
}

/* The host buffers of this program are pageable (malloc): cudaMemcpyAsync stages them before it returns,
 * so the caller may reuse the source at once. */
void cuda_upload(void *dst, const void *host_src, size_t bytes)
{
    if (bytes)
        CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, g.stream));
}

void cuda_sync(void) { CHECK(cudaStreamSynchronize(g.stream)); }

void cuda_download(void *host_dst, const void *src, size_t bytes)
{
    if (bytes)
        CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, g.stream));
    cuda_sync();
}

/* The GPU table computes on the device: no host threads to size (augmentation runs there too). */
void cuda_set_threads(int) {}

/* Grows a device scratch buffer; only the first steps of a run, or of a larger batch, get here. */
template <typename T> void grow(T **p, size_t count)
{
    if (g.capturing) /* graph_plan's warm-up steps exist so that this cannot happen */
        fatal("kernels_cuda", "a scratch buffer grew during graph capture");
    if (*p) {
        cuda_sync();
        CHECK(cudaFree(*p));
        *p = nullptr;
    }
    CHECK(cudaMalloc((void **)p, count * sizeof(T)));
    g.generation++;
}

/* ---- GEMM ---- */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: a row-major matrix read as column-major
 * is its transpose, so the operands swap places and keep their own transpose flags. */
void cuda_gemm(int transa, int transb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc)
{
    const float one = 1.0f;
    CHECK(cublasSgemm(g.blas, transb ? CUBLAS_OP_T : CUBLAS_OP_N, transa ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
                      &one, B, ldb, A, lda, &beta, C, ldc));
}

/* ---- convolution data movement (private to this table's Conv2D layer below) ----
 * im2col rows are output pixels (b, oy, ox) and columns (ky, kx, c), zero outside the image, so with an
 * HWIO kernel a convolution is col[P x 9C] * kernel[9C x cout] with no conversion; col2im is its adjoint. */

/* One thread per col element, (row, ky, kx, c) with c fastest: writes are contiguous, reads of a pixel's
 * channels too. */
__global__ void im2col3x3_kernel(const float *x, int H, int W, int C, int pad, float *col, unsigned n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const int OH = H + 2 * pad - 2, OW = W + 2 * pad - 2;
    const int c = i % C;
    unsigned t = i / C;
    const int k = t % 9;
    t /= 9; /* output pixel */
    const int ox = t % OW;
    t /= OW;
    const int oy = t % OH, b = t / OH;
    const int iy = oy + k / 3 - pad, ix = ox + k % 3 - pad;
    col[i] = (iy < 0 || iy >= H || ix < 0 || ix >= W) ? 0.0f : x[(((size_t)b * H + iy) * W + ix) * C + c];
}

void cuda_im2col3x3(const float *x, int B, int H, int W, int C, int pad, float *col)
{
    const unsigned n = count32((size_t)B * (H + 2 * pad - 2) * (W + 2 * pad - 2) * 9 * C, "im2col3x3");
    if (!n)
        return;
    im2col3x3_kernel<<<blocks(n), THREADS, 0, g.stream>>>(x, H, W, C, pad, col, n);
    LAUNCHED("im2col3x3");
}

/* A gather, one thread per dx element, adding the col entries in the CPU's order (ky, then kx) starting
 * from zero: the same float sums, and no atomics. */
__global__ void col2im3x3_kernel(const float *dcol, int H, int W, int C, int pad, float *dx, unsigned n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const int OH = H + 2 * pad - 2, OW = W + 2 * pad - 2;
    const int c = i % C;
    unsigned t = i / C;
    const int ix = t % W;
    t /= W;
    const int iy = t % H, b = t / H;
    const size_t rowlen = (size_t)9 * C;
    float s = 0.0f;
    for (int ky = 0; ky < 3; ky++) {
        const int oy = iy + pad - ky;
        if (oy < 0 || oy >= OH)
            continue;
        for (int kx = 0; kx < 3; kx++) {
            const int ox = ix + pad - kx;
            if (ox < 0 || ox >= OW)
                continue;
            s += dcol[(((size_t)b * OH + oy) * OW + ox) * rowlen + (size_t)(ky * 3 + kx) * C + c];
        }
    }
    dx[i] = s;
}

void cuda_col2im3x3(const float *dcol, int B, int H, int W, int C, int pad, float *dx)
{
    const unsigned n = count32((size_t)B * H * W * C, "col2im3x3");
    if (!n)
        return;
    col2im3x3_kernel<<<blocks(n), THREADS, 0, g.stream>>>(dcol, H, W, C, pad, dx, n);
    LAUNCHED("col2im3x3");
}

/* ---- bias and activation ---- */

__global__ void bias_act_kernel(float *y, const float *bias, int cols, int relu, unsigned n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float t = y[i] + bias[i % cols];
    y[i] = relu ? (t > 0.0f ? t : 0.0f) : t;
}

void cuda_bias_act(float *y, const float *bias, size_t rows, int cols, int relu)
{
    const unsigned n = count32(rows * cols, "bias_act");
    if (!n)
        return;
    bias_act_kernel<<<blocks(n), THREADS, 0, g.stream>>>(y, bias, cols, relu, n);
    LAUNCHED("bias_act");
}

/* bias_act_grad in two deterministic passes. Pass 1: a block of 32 columns x 8 row lanes takes a chunk of
 * GRAD_ROWS rows, updates dy and writes the chunk's column sums (lane order fixed). Pass 2: one block
 * per column adds the chunk sums with a fixed tree. The CPU's partition (32 chunks) would leave most of
 * the GPU idle; only the summation order differs from it. */
constexpr int GRAD_ROWS = 256, GRAD_COLS = 32, GRAD_LANES = 8, SUM_THREADS = 256;

__global__ void bias_act_grad_rows(float *dy, const float *y, size_t rows, int cols, int relu, float scale,
                                   float *partial)
{
    __shared__ float lane_sum[GRAD_LANES][GRAD_COLS];
    const int c = blockIdx.x * GRAD_COLS + threadIdx.x, chunk = blockIdx.y;
    const size_t r0 = (size_t)chunk * GRAD_ROWS, r1 = r0 + GRAD_ROWS < rows ? r0 + GRAD_ROWS : rows;
    float s = 0.0f;
    if (c < cols)
        for (size_t r = r0 + threadIdx.y; r < r1; r += GRAD_LANES) {
            const size_t at = r * cols + c;
            const float gr = (relu && !(y[at] > 0.0f)) ? 0.0f : dy[at] * scale;
            dy[at] = gr;
            s += gr;
        }
    lane_sum[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int l = 0; l < GRAD_LANES; l++)
            t += lane_sum[l][threadIdx.x];
        partial[(size_t)chunk * cols + c] = t;
    }
}

__global__ void column_sums(const float *partial, int chunks, int cols, float *out)
{
    __shared__ float s[SUM_THREADS];
    const int c = blockIdx.x;
    float t = 0.0f;
    for (int k = threadIdx.x; k < chunks; k += SUM_THREADS)
        t += partial[(size_t)k * cols + c];
    s[threadIdx.x] = t;
    __syncthreads();
    for (unsigned half = SUM_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[c] = s[0];
}

void cuda_bias_act_grad(float *dy, const float *y, size_t rows, int cols, int relu, float scale, float *dbias)
{
    count32(rows * cols, "bias_act_grad");
    if (cols <= 0)
        return;
    const size_t chunks = rows ? (rows + GRAD_ROWS - 1) / GRAD_ROWS : 1;
    if (chunks > 65535)
        fatal("bias_act_grad", "more than 65535 * 256 rows (use a smaller batch)");
    if (g.partial_cap < chunks * cols) {
        grow(&g.partial, chunks * cols);
        g.partial_cap = chunks * cols;
    }
    const dim3 grid((cols + GRAD_COLS - 1) / GRAD_COLS, (unsigned)chunks), block(GRAD_COLS, GRAD_LANES);
    bias_act_grad_rows<<<grid, block, 0, g.stream>>>(dy, y, rows, cols, relu, scale, g.partial);
    LAUNCHED("bias_act_grad (rows)");
    column_sums<<<cols, SUM_THREADS, 0, g.stream>>>(g.partial, (int)chunks, cols, dbias);
    LAUNCHED("bias_act_grad (column sums)");
}

/* ---- the layers: convolution, dense ---- */

/* Conv2D: im2col + SGEMM (cuBLAS) + bias/ReLU. The saved state is the im2col matrix, which backward reads
 * for the kernel gradient and then reuses as scratch for the input gradient's columns. */
size_t cuda_conv3x3_saved(int B, int H, int W, int C, int pad)
{
    return (size_t)B * (H + 2 * pad - 2) * (W + 2 * pad - 2) * 9 * C * sizeof(float);
}

void cuda_conv3x3_forward(const float *x, int B, int H, int W, int C, int pad, const float *kernel,
                          const float *bias, int cout, int relu, void *saved, float *y)
{
    const int P = B * (H + 2 * pad - 2) * (W + 2 * pad - 2);
    float *col = (float *)saved;
    cuda_im2col3x3(x, B, H, W, C, pad, col);
    cuda_gemm(0, 0, P, cout, 9 * C, col, 9 * C, kernel, cout, 0.0f, y, cout);
    cuda_bias_act(y, bias, (size_t)P, cout, relu);
}

void cuda_conv3x3_backward(const float *, const float *y, float *dy, int B, int H, int W, int C, int pad,
                           const float *kernel, int cout, int relu, float scale, void *saved, float *dkernel,
                           float *dbias, float *dx)
{
    const int P = B * (H + 2 * pad - 2) * (W + 2 * pad - 2);
    float *col = (float *)saved;
    cuda_bias_act_grad(dy, y, (size_t)P, cout, relu, scale, dbias);
    cuda_gemm(1, 0, 9 * C, cout, P, col, 9 * C, dy, cout, 0.0f, dkernel, cout);
    if (!dx)
        return;
    cuda_gemm(0, 1, P, 9 * C, cout, dy, cout, kernel, cout, 0.0f, col, 9 * C);
    cuda_col2im3x3(col, B, H, W, C, pad, dx);
}

/* Dense: SGEMMs and the bias/activation pass. */
void cuda_dense_forward(const float *x, int B, int in, const float *kernel, const float *bias, int out, int relu,
                        float *y)
{
    cuda_gemm(0, 0, B, out, in, x, in, kernel, out, 0.0f, y, out);
    cuda_bias_act(y, bias, (size_t)B, out, relu);
}

void cuda_dense_backward(const float *x, const float *y, float *dy, int B, int in, const float *kernel, int out,
                         int relu, float scale, float *dkernel, float *dbias, float *dx)
{
    cuda_bias_act_grad(dy, y, (size_t)B, out, relu, scale, dbias);
    cuda_gemm(1, 0, in, out, B, x, in, dy, out, 0.0f, dkernel, out);
    if (dx)
        cuda_gemm(0, 1, B, in, out, dy, out, kernel, out, 0.0f, dx, in);
}

/* ---- pooling and dropout ---- */

__global__ void pool_dropout_kernel(const float *x, int H, int W, int C, float rate, float scale,
                                    const uint64_t *key, float *y, uint8_t *idx, unsigned n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const int OH = H / 2, OW = W / 2;
    const int c = i % C;
    unsigned t = i / C;
    const int ox = t % OW;
    t /= OW;
    const int oy = t % OH, b = t / OH;
    const float *p = x + (((size_t)b * H + 2 * oy) * W + 2 * ox) * C + c;
    const float q[4] = {p[0], p[C], p[(size_t)W * C], p[(size_t)W * C + C]};
    float m = q[0];
    int arg = 0;
    for (int k = 1; k < 4; k++)
        if (q[k] > m) {
            m = q[k];
            arg = k;
        }
    const int kept = rate <= 0.0f || dropout_kept(*key, i, rate);
    y[i] = kept ? m * scale : 0.0f;
    if (idx)
        idx[i] = (uint8_t)(arg | (kept << 2));
}

void cuda_pool_dropout(const float *x, int B, int H, int W, int C, float rate, const uint64_t *key, float *y,
                       uint8_t *idx)
{
    const unsigned n = count32((size_t)B * (H / 2) * (W / 2) * C, "pool_dropout");
    if (!n)
        return;
    const float scale = rate > 0.0f ? 1.0f / (1.0f - rate) : 1.0f;
    pool_dropout_kernel<<<blocks(n), THREADS, 0, g.stream>>>(x, H, W, C, rate, scale, key, y, idx, n);
    LAUNCHED("pool_dropout");
}

__global__ void pool_dropout_grad_kernel(const float *dy, const uint8_t *idx, int H, int W, int C, float scale,
                                         float *dx, unsigned n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const int OH = H / 2, OW = W / 2;
    const int c = i % C;
    unsigned t = i / C;
    const int ix = t % W;
    t /= W;
    const int iy = t % H, b = t / H;
    const int oy = iy / 2, ox = ix / 2;
    float v = 0.0f; /* the dropped odd last row and column get no gradient */
    if (oy < OH && ox < OW) {
        const size_t s = (((size_t)b * OH + oy) * OW + ox) * C + c;
        const uint8_t k = idx[s];
        if ((k & 3) == (iy & 1) * 2 + (ix & 1) && (k & 4))
            v = dy[s] * scale;
    }
    dx[i] = v;
}

void cuda_pool_dropout_grad(const float *dy, const uint8_t *idx, int B, int H, int W, int C, float rate, float *dx)
{
    const unsigned n = count32((size_t)B * H * W * C, "pool_dropout_grad");
    if (!n)
        return;
    const float scale = rate > 0.0f ? 1.0f / (1.0f - rate) : 1.0f;
    pool_dropout_grad_kernel<<<blocks(n), THREADS, 0, g.stream>>>(dy, idx, H, W, C, scale, dx, n);
    LAUNCHED("pool_dropout_grad");
}

__global__ void dropout_kernel(float *x, float rate, float scale, const uint64_t *key, unsigned n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = dropout_kept(*key, i, rate) ? x[i] * scale : 0.0f;
}

void cuda_dropout(float *x, size_t n, float rate, const uint64_t *key)
{
    const unsigned n32 = count32(n, "dropout");
    if (rate <= 0.0f || !n32)
        return;
    dropout_kernel<<<blocks(n32), THREADS, 0, g.stream>>>(x, rate, 1.0f / (1.0f - rate), key, n32);
    LAUNCHED("dropout");
}

/* ---- loss ---- */

/* One thread per row. The CPU keeps p[] and q[] in arrays; here p_k = exp(z_k - m) / s is recomputed
 * where needed (the same float operations, so the same values), which needs no bound on `classes`. The
 * row's loss (double) and correctness go to scratch; softmax_sums adds them up. */
__global__ void softmax_xent_kernel(const float *logits, const uint8_t *labels, int B, int classes, float *probs,
                                    float *dlogits, double *row_loss, int *row_right)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B)
        return;
    const float eps = 1e-7f, hi = 1.0f - 1e-7f;
    const float *z = logits + (size_t)b * classes;
    float m = z[0];
    int arg = 0;
    for (int k = 1; k < classes; k++)
        if (z[k] > m) {
            m = z[k];
            arg = k;
        }
    float s = 0.0f;
    for (int k = 0; k < classes; k++)
        s += expf(z[k] - m);
    float t = 0.0f;
    for (int k = 0; k < classes; k++)
        t += expf(z[k] - m) / s;
    const int y = labels[b];
    const float qy = (expf(z[y] - m) / s) / t;
    const float qc = qy < eps ? eps : qy > hi ? hi : qy;
    row_loss[b] = -log((double)qc);
    row_right[b] = arg == y;
    if (probs)
        for (int k = 0; k < classes; k++)
            probs[(size_t)b * classes + k] = expf(z[k] - m) / s;
    if (dlogits) {
        const float gq = (qy >= eps && qy <= hi) ? -1.0f / qy : 0.0f;
        float dot = 0.0f;
        for (int k = 0; k < classes; k++)
            dot += (((k == y ? gq : 0.0f) - gq * qy) / t) * (expf(z[k] - m) / s);
        float *dz = dlogits + (size_t)b * classes;
        for (int k = 0; k < classes; k++) {
            const float dp = ((k == y ? gq : 0.0f) - gq * qy) / t;
            dz[k] = (expf(z[k] - m) / s) * (dp - dot) / (float)B;
        }
    }
}

/* The batch's loss and correct count into sums[0..1], on the device so that no step waits for the host:
 * one block, each thread a fixed stride of rows, then a fixed tree; deterministic, though in another
 * order than the CPU's row-by-row sum (a rounding of the double, far below the printed digits). */
constexpr int SUMS_THREADS = 256;

__global__ void softmax_sums(const double *row_loss, const int *row_right, int B, double *sums)
{
    __shared__ double loss[SUMS_THREADS];
    __shared__ int right[SUMS_THREADS];
    double l = 0.0;
    int r = 0;
    for (int b = threadIdx.x; b < B; b += SUMS_THREADS) {
        l += row_loss[b];
        r += row_right[b];
    }
    loss[threadIdx.x] = l;
    right[threadIdx.x] = r;
    __syncthreads();
    for (unsigned half = SUMS_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            loss[threadIdx.x] += loss[threadIdx.x + half];
            right[threadIdx.x] += right[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        sums[0] += loss[0];
        sums[1] += right[0];
    }
}

void cuda_softmax_xent(const float *logits, const uint8_t *labels, int B, int classes, float *probs, float *dlogits,
                       double *sums)
{
    if (B <= 0)
        return;
    if (g.rows_cap < (size_t)B) {
        grow(&g.row_loss, B);
        grow(&g.row_right, B);
        g.rows_cap = B;
    }
    softmax_xent_kernel<<<(B + 127) / 128, 128, 0, g.stream>>>(logits, labels, B, classes, probs, dlogits,
                                                                 g.row_loss, g.row_right);
    LAUNCHED("softmax_xent");
    softmax_sums<<<1, SUMS_THREADS, 0, g.stream>>>(g.row_loss, g.row_right, B, sums);
    LAUNCHED("softmax_xent (sums)");
}

/* ---- optimizer ---- */

__global__ void rmsprop_kernel(float *p, const float *gr, float *a, const float *lr, float rho, float eps,
                               unsigned n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float gi = gr[i], ai = rho * a[i] + (1.0f - rho) * gi * gi;
    a[i] = ai;
    p[i] -= *lr * gi / (sqrtf(ai) + eps);
}

void cuda_rmsprop(float *p, const float *gr, float *a, size_t n, const float *lr, float rho, float eps)
{
    const unsigned n32 = count32(n, "rmsprop");
    if (!n32)
        return;
    rmsprop_kernel<<<blocks(n32), THREADS, 0, g.stream>>>(p, gr, a, lr, rho, eps, n32);
    LAUNCHED("rmsprop");
}

/* ---- input: raw batches through pinned buffers (input_ring.h) and augmentation on the GPU ---- */

void *input_host_alloc(size_t bytes)
{
    void *p = nullptr;
    if (cudaMallocHost(&p, bytes ? bytes : 1) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    return p;
}

void input_host_free(void *p) { CHECK(cudaFreeHost(p)); }

void input_upload(int slot, void *dev, const void *host, size_t bytes)
{
    CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, g.copy));
    CHECK(cudaEventRecord(g.arrived[slot], g.copy));
}

void input_wait_arrived(int slot) { CHECK(cudaStreamWaitEvent(g.stream, g.arrived[slot], 0)); }

void input_mark_consumed(int slot) { CHECK(cudaEventRecord(g.consumed[slot], g.stream)); }

/* An event never recorded counts as complete, so the first use of a slot does not wait. */
void input_wait_consumed(int slot) { CHECK(cudaEventSynchronize(g.consumed[slot])); }

/* augment_image (augment.c) per output value: the same clamped taps, the same weights with 1/255 folded
 * in, the same order of the four products; nvcc may fuse them into FMAs, so the result matches the CPU
 * within a float rounding or two (cuda_check compares at 1e-6), and params == NULL is exactly value/255
 * as augment_convert. One thread per output byte of the batch; thread b < B also copies label b. */
__global__ void augment_kernel(const uint8_t *images, const augment_params *params, const uint8_t *labels_in, int B,
                               float *x, uint8_t *labels, unsigned n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (unsigned)B)
        labels[i] = labels_in[i];
    if (i >= n)
        return;
    constexpr int h = CIFAR_H, w = CIFAR_W, c = CIFAR_C;
    const float scale = 1.0f / 255.0f;
    const int ch = i % c;
    unsigned t = i / c;
    const int col = t % w;
    t /= w;
    const int r = t % h, b = t / h;
    const uint8_t *in = images + (size_t)b * CIFAR_IMAGE_BYTES;
    if (!params) {
        x[i] = (float)in[((size_t)r * w + col) * c + ch] * scale;
        return;
    }
    const augment_params p = params[b];
    const float sr = fminf(fmaxf(p.shift_rows, (float)-h - 1.0f), (float)h + 1.0f);
    const float sc = fminf(fmaxf(p.shift_cols, (float)-w - 1.0f), (float)w + 1.0f);
    const float floor_r = floorf(sr), floor_c = floorf(sc);
    const float fr = sr - floor_r, fc = sc - floor_c;
    const int ir = (int)floor_r, ic = (int)floor_c;
    const float w00 = (1.0f - fr) * (1.0f - fc) * scale, w01 = (1.0f - fr) * fc * scale;
    const float w10 = fr * (1.0f - fc) * scale, w11 = fr * fc * scale;
    const auto clampi = [](int v, int hi) { return v < 0 ? 0 : v > hi ? hi : v; };
    const int top = clampi(r + ir, h - 1), bot = clampi(r + ir + 1, h - 1);
    const int src_col = (p.flip ? w - 1 - col : col) + ic;
    const int left = clampi(src_col, w - 1), right = clampi(src_col + 1, w - 1);
    const auto at = [&](int y, int xx) { return (float)in[((size_t)y * w + xx) * c + ch]; };
    x[i] = w00 * at(top, left) + w01 * at(top, right) + w10 * at(bot, left) + w11 * at(bot, right);
}

void input_augment(const uint8_t *images, const augment_params *params, const uint8_t *labels_in, int B, float *x,
                   uint8_t *labels)
{
    const unsigned n = count32((size_t)B * CIFAR_IMAGE_BYTES, "augment");
    if (!n)
        return;
    augment_kernel<<<blocks(n), THREADS, 0, g.stream>>>(images, params, labels_in, B, x, labels, n);
    LAUNCHED("augment");
}

const input_engine cuda_input = {
    .host_alloc = input_host_alloc,
    .host_free = input_host_free,
    .upload = input_upload,
    .wait_arrived = input_wait_arrived,
    .mark_consumed = input_mark_consumed,
    .wait_consumed = input_wait_consumed,
    .augment = input_augment,
};

/* ---- graphs: the table's stream captured and replayed ---- */

} // namespace

struct kernel_graph {
    cudaGraphExec_t exec;
    unsigned generation; /* g.generation at capture */
};

namespace {

/* Thread-local mode: only this thread's calls that are unsafe during a capture (cudaMalloc, a sync) fail;
 * the table is single-threaded, and another library's threads are none of its business. */
void graph_capture_begin(void)
{
    require_open();
    g.capture_failure[0] = 0;
    CHECK(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeThreadLocal));
    g.capturing = true;
}

kernel_graph *graph_capture_end(void)
{
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(g.stream, &graph), "cudaStreamEndCapture");
    g.capturing = false;
    cudaGraphExec_t exec = nullptr;
    if (!g.capture_failure[0])
        check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate"); /* fatal now: not capturing */
    if (graph)
        cudaGraphDestroy(graph);
    if (g.capture_failure[0]) {
        fprintf(stderr, "kernels_cuda: CUDA graph capture failed (%s); continuing without graphs\n",
                g.capture_failure);
        (void)cudaGetLastError();
        return nullptr;
    }
    return new kernel_graph{exec, g.generation};
}

void graph_replay(kernel_graph *kg) { CHECK(cudaGraphLaunch(kg->exec, g.stream)); }

int graph_stale(const kernel_graph *kg) { return kg->generation != g.generation; }

void graph_destroy(kernel_graph *kg)
{
    if (!kg)
        return;
    CHECK(cudaGraphExecDestroy(kg->exec));
    delete kg;
}

const graph_engine cuda_graph = {
    .capture_begin = graph_capture_begin,
    .capture_end = graph_capture_end,
    .replay = graph_replay,
    .stale = graph_stale,
    .destroy = graph_destroy,
};

} // namespace

/* ---- the table and its lifetime ---- */

int kernels_cuda_device_count(char *why, size_t len)
{
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        /* Without any NVIDIA driver the runtime reports cudaErrorInsufficientDriver, which reads oddly. */
        if (why && len)
            snprintf(why, len, "cudaGetDeviceCount: %s: %s%s", cudaGetErrorName(e), cudaGetErrorString(e),
                     e == cudaErrorInsufficientDriver ? "; no NVIDIA driver loaded, or one older than this runtime"
                                                      : "");
        (void)cudaGetLastError();
        return 0;
    }
    if (n == 0 && why && len)
        snprintf(why, len, "cudaGetDeviceCount: 0 devices");
    return n;
}

int kernels_cuda_describe(int device, char *out, size_t len)
{
    cudaDeviceProp prop;
    char bus[32];
    cudaError_t e;
    if ((e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess ||
        (e = cudaDeviceGetPCIBusId(bus, (int)sizeof bus, device)) != cudaSuccess) {
        snprintf(out, len, "CUDA device %d: %s", device, cudaGetErrorString(e));
        (void)cudaGetLastError();
        return -1;
    }
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(out, len, "%s, GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x, PCI %s",
             prop.name, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15], bus);
    return 0;
}

int kernels_cuda_open(int device, char *err, size_t len)
{
    if (g.device >= 0) {
        snprintf(err, len, "kernels_cuda: already open on device %d", g.device);
        return -1;
    }
    cudaError_t e;
    cublasStatus_t s;
    if ((e = cudaSetDevice(device)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking)) != cudaSuccess) {
        snprintf(err, len, "CUDA device %d: %s", device, cudaGetErrorString(e));
        (void)cudaGetLastError();
        kernels_cuda_close();
        return -1;
    }
    /* The build carries sm_90 code and compute_90 PTX: an older GPU fails here, not at the first kernel. */
    cudaFuncAttributes fa;
    if ((e = cudaFuncGetAttributes(&fa, rmsprop_kernel)) != cudaSuccess) {
        cudaDeviceProp prop;
        const int known = cudaGetDeviceProperties(&prop, device) == cudaSuccess;
        snprintf(err, len, "CUDA device %d (%s, compute capability %d.%d): %s; rebuild for it with NVCC_FLAGS "
                 "(trainer/README.md, GPU)", device, known ? prop.name : "?", known ? prop.major : 0,
                 known ? prop.minor : 0, cudaGetErrorString(e));
        (void)cudaGetLastError();
        kernels_cuda_close();
        return -1;
    }
    if ((e = cudaStreamCreateWithFlags(&g.copy, cudaStreamNonBlocking)) != cudaSuccess) {
        snprintf(err, len, "CUDA device %d: copy stream: %s", device, cudaGetErrorString(e));
        kernels_cuda_close();
        return -1;
    }
    for (int i = 0; i < INPUT_RING_SLOTS; i++)
        if ((e = cudaEventCreateWithFlags(&g.arrived[i], cudaEventDisableTiming)) != cudaSuccess ||
            (e = cudaEventCreateWithFlags(&g.consumed[i], cudaEventDisableTiming)) != cudaSuccess) {
            snprintf(err, len, "CUDA device %d: events: %s", device, cudaGetErrorString(e));
            kernels_cuda_close();
            return -1;
        }
    if ((s = cublasCreate(&g.blas)) != CUBLAS_STATUS_SUCCESS ||
        (s = cublasSetStream(g.blas, g.stream)) != CUBLAS_STATUS_SUCCESS ||
        (s = cublasSetMathMode(g.blas, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, len, "cuBLAS on CUDA device %d: %s", device, cublasGetStatusString(s));
        kernels_cuda_close();
        return -1;
    }
    /* After cublasSetStream, which resets the workspace to cuBLAS's pool. The same workspace for plain and
     * captured GEMMs keeps their algorithms, hence their results, the same; 32 MiB is what cuBLAS's
     * documentation recommends for Hopper. */
    const size_t workspace = (size_t)32 << 20;
    if ((e = cudaMalloc(&g.blas_workspace, workspace)) != cudaSuccess ||
        (s = cublasSetWorkspace(g.blas, g.blas_workspace, workspace)) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, len, "cuBLAS workspace on CUDA device %d: %s", device,
                 e != cudaSuccess ? cudaGetErrorString(e) : cublasGetStatusString(s));
        (void)cudaGetLastError();
        kernels_cuda_close();
        return -1;
    }
    g.device = device;
    return 0;
}

void kernels_cuda_set_tf32(int on)
{
    require_open();
    CHECK(cublasSetMathMode(g.blas, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

void *kernels_cuda_stream(void)
{
    require_open();
    return g.stream;
}

void kernels_cuda_close(void)
{
    if (g.stream)
        cudaStreamSynchronize(g.stream);
    if (g.blas)
        cublasDestroy(g.blas);
    cudaFree(g.partial);
    cudaFree(g.row_loss);
    cudaFree(g.row_right);
    cudaFree(g.blas_workspace);
    if (g.copy)
        cudaStreamSynchronize(g.copy);
    for (int i = 0; i < INPUT_RING_SLOTS; i++) {
        if (g.arrived[i])
            cudaEventDestroy(g.arrived[i]);
        if (g.consumed[i])
            cudaEventDestroy(g.consumed[i]);
    }
    if (g.copy)
        cudaStreamDestroy(g.copy);
    if (g.stream)
        cudaStreamDestroy(g.stream);
    (void)cudaGetLastError(); /* closing after a failed open may leave an error behind */
    g = state();
}

const struct kernels kernels_cuda = {
    .name = "cuda",
    .alloc = cuda_alloc,
    .release = cuda_release,
    .upload = cuda_upload,
    .download = cuda_download,
    .set_threads = cuda_set_threads,
    .conv3x3_saved = cuda_conv3x3_saved,
    .conv3x3_forward = cuda_conv3x3_forward,
    .conv3x3_backward = cuda_conv3x3_backward,
    .dense_forward = cuda_dense_forward,
    .dense_backward = cuda_dense_backward,
    .pool_dropout_forward = cuda_pool_dropout,
    .pool_dropout_backward = cuda_pool_dropout_grad,
    .dropout_forward = cuda_dropout,
    .softmax_xent = cuda_softmax_xent,
    .rmsprop = cuda_rmsprop,
    .device = 1,
    .sync = cuda_sync,
    .input = &cuda_input,
    .graph = &cuda_graph,
    .infer = NULL, /* inference walks the table: the GPU runs each row on the whole batch */
};

/* The one symbol cuda_plugin.c looks up (cuda_plugin.h). */
extern "C" const struct cuda_plugin *cifar_train_cuda_plugin(void)
{
    static const struct cuda_plugin plugin = {
        CUDA_PLUGIN_ABI,   kernels_cuda_device_count, kernels_cuda_open, kernels_cuda_close,
        kernels_cuda_set_tf32, &kernels_cuda,   kernels_cuda_describe,
    };
    return &plugin;
}
