/* kernels: the compute primitives the model is built from, as a table of function pointers per device.
 *
 * model.c only ever calls through a `struct kernels`, and every buffer it passes was obtained from that
 * table's alloc(), so the CUDA table (kernels_cuda.cu) sits beside the CPU one (kernels_cpu.c) without
 * touching the model, the optimizer or the training loop.
 *
 * Layouts (row-major, as Keras):
 *  - activations NHWC: x[((b * H + y) * W + x) * C + c];
 *  - conv kernels HWIO, i.e. a (3*3*Cin) x Cout matrix; im2col rows are output pixels (b, oy, ox) and
 *    columns (ky, kx, c), so a convolution is col[P x 9Cin] * kernel[9Cin x Cout] with no conversion;
 *  - dense kernels in x out; Flatten of NHWC is a no-op.
 * All sizes are element counts. Functions are synchronous from the caller's point of view on the CPU;
 * a device table may queue them on one stream, with download() as the synchronisation point.
 * Values that change from step to step (dropout keys, the learning rate) and the loss sums are passed
 * through pointers to this table's memory, read or written when the kernel runs, never by value: a device
 * table may record a step once (graph below) and replay it with new values uploaded before each replay. */
#ifndef TRAINER_KERNELS_H
#define TRAINER_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

struct input_engine; /* input_ring.h */
struct graph_engine; /* below */
struct infer_engine; /* below */

/* Inverted dropout's rule, shared by every device: unit i of a layer whose stream key is `key` is kept
 * when the i-th 16-bit draw of the stream is >= rate * 65536; the draws are the stream's 32-bit words cut
 * in halves, low half first, so one Philox block (rng.h) decides eight units: block i / 8 holds unit i's
 * draw, which dropout_draw takes out of it. */
static inline TRAINER_HD uint32_t dropout_draw(const uint32_t block[4], size_t i)
{
    return (block[(i >> 1) & 3] >> ((i & 1) * 16)) & 0xffffu;
}

static inline TRAINER_HD int dropout_kept(uint64_t key, size_t i, float rate)
{
    uint32_t w[4];
    rng_block(key, i >> 3, w);
    return (float)dropout_draw(w, i) >= rate * 65536.0f;
}

struct kernels {
    const char *name; /* "cpu" */

    void *(*alloc)(size_t bytes); /* zero-filled, 64-byte aligned; NULL when out of memory */
    void (*release)(void *p);
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *src, size_t bytes);
    void (*set_threads)(int n); /* compute threads of this process */

    /* Row-major C[M x N] = op(A) * op(B) + beta * C, op(X) = X or X^T (trans != 0). */
    void (*gemm)(int transa, int transb, int M, int N, int K, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc);

    /* 3x3, stride 1, pad 0 ("valid") or 1 ("same"): col[(b,oy,ox)][(ky,kx,c)], zero outside the image. */
    void (*im2col3x3)(const float *x, int B, int H, int W, int C, int pad, float *col);
    /* The adjoint of im2col3x3: dx[b,y,x,c] = sum of the col entries that read x[b,y,x,c]; overwrites dx. */
    void (*col2im3x3)(const float *dcol, int B, int H, int W, int C, int pad, float *dx);

    /* Conv2D 3x3, stride 1, pad 1 ("same") or 0 ("valid"), NHWC in and out, kernel HWIO (9C x cout):
     * y = act(conv(x, kernel) + bias), act ReLU when relu. Each table convolves its own way (the CPU with
     * oneDNN's direct and Winograd primitives, cpu_conv.h; the GPU with im2col3x3 + gemm). `col` is where
     * forward leaves what backward needs, and conv_col says what that is:
     *  - conv_col: the im2col matrix (B*OH*OW x 9C floats, required); backward's `saved` is that col, and it
     *    is used as scratch for the input gradient after its forward content has been read;
     *  - !conv_col: nothing is needed (col may be NULL) and backward's `saved` is the layer's input x; a
     *    non-NULL col (at least B*H*W*C floats) receives a copy of x.
     * conv3x3_grad takes dy already through the activation (bias_act_grad), writes dkernel, then dx when
     * dx is not NULL. */
    void (*conv3x3)(const float *x, int B, int H, int W, int C, int pad, const float *kernel, const float *bias,
                    int cout, int relu, float *col, float *y);
    void (*conv3x3_grad)(const float *dy, int B, int H, int W, int C, int pad, const float *kernel, int cout,
                         float *saved, float *dkernel, float *dx);
    int conv_col;

    /* y[r][c] = act(y[r][c] + bias[c]) for r < rows, c < cols; act is ReLU when relu, else identity. */
    void (*bias_act)(float *y, const float *bias, size_t rows, int cols, int relu);
    /* Backward of bias_act (and of an in-place inverted dropout after it): y is the forward output.
     * dy[r][c] = relu && y[r][c] <= 0 ? 0 : dy[r][c] * scale; then dbias[c] = sum_r dy[r][c] (overwrites).
     * scale is 1, or 1/(1-rate) when y went through dropout in place (dropped units are 0, so they stop
     * the gradient like ReLU's zeros do). */
    void (*bias_act_grad)(float *dy, const float *y, size_t rows, int cols, int relu, float scale,
                          float *dbias);

    /* 2x2 max-pool, stride 2 (floor: a last odd row/column is dropped), then inverted dropout:
     * y = max * (kept ? 1/(1-rate) : 0), kept = dropout_kept(*key, i, rate), i the index into y, *key in
     * this table's memory. rate 0 (inference) keeps everything and then key and idx may be NULL. idx[i]
     * records, for backward, the argmax (bits 0-1: dy*2+dx, first maximum in row-major order) and whether
     * it was kept (bit 2). */
    void (*pool_dropout)(const float *x, int B, int H, int W, int C, float rate, const uint64_t *key, float *y,
                         uint8_t *idx);
    /* dx = gradient w.r.t. x (overwritten, shape B,H,W,C) from dy (B,H/2,W/2,C). */
    void (*pool_dropout_grad)(const float *dy, const uint8_t *idx, int B, int H, int W, int C, float rate,
                              float *dx);
    /* In-place inverted dropout on n values, same rule and key use as pool_dropout (key may be NULL at
     * rate 0). */
    void (*dropout)(float *x, size_t n, float rate, const uint64_t *key);

    /* Softmax + categorical cross-entropy as Keras 2.x computes it: p = softmax(z), q = p / sum(p),
     * loss = -log(clip(q[label], 1e-7, 1 - 1e-7)). For B rows of `classes` logits: writes probs (may be
     * NULL), dlogits = d(mean loss)/dz (may be NULL: inference), and adds to sums[0] the batch's summed
     * loss and to sums[1] its correct count (argmax == label); sums: 2 doubles in this table's memory, so
     * that a device adds there without the host waiting for each batch. */
    void (*softmax_xent)(const float *logits, const uint8_t *labels, int B, int classes, float *probs,
                         float *dlogits, double *sums);

    /* RMSprop step on n values: a = rho*a + (1-rho)*g^2; p -= *lr * g / (sqrt(a) + eps), *lr in this
     * table's memory. */
    void (*rmsprop)(float *p, const float *g, float *a, size_t n, const float *lr, float rho, float eps);

    /* Non-zero when the table's buffers live in device memory, so that collectives on them take the
     * device path (NCCL); zero for host memory (MPI). */
    int device;

    /* Optional; NULL when every call above has finished when it returns (the CPU). Blocks until all the
     * work this table has queued is done, so that another library may read its buffers: the gradients
     * handed to libcollective's NCCL stream, which is ordered only after the legacy default stream. */
    void (*sync)(void);

    /* Optional; NULL where batches are converted on the host and uploaded as floats by model_forward
     * (the CPU). A device table sets it to feed raw batches through input_ring.h and augment them there. */
    const struct input_engine *input;

    /* Optional; NULL where calls run as they are made (the CPU). Graphs of this table's calls. */
    const struct graph_engine *graph;

    /* Optional; NULL where inference runs the calls above row by row like training (the GPU). */
    const struct infer_engine *infer;
};

/* A recorded sequence of a device table's calls, replayed with the same arguments: every buffer address
 * is fixed at capture, the buffers' contents are read when the replay runs. Between capture_begin and
 * capture_end the table's calls are recorded, not run, and nothing may wait for the device (download,
 * sync) or upload from the host. */
struct kernel_graph;
struct graph_engine {
    void (*capture_begin)(void);
    /* The graph recorded since capture_begin, or NULL when it could not be recorded or instantiated
     * (nothing of it ran: run the calls again without capturing). */
    struct kernel_graph *(*capture_end)(void);
    void (*replay)(struct kernel_graph *g); /* queued like any other call of the table */
    /* Whether the table moved a scratch buffer that g uses since it was captured (a larger batch grew
     * it): such a graph must be destroyed and captured again. */
    int (*stale)(const struct kernel_graph *g);
    void (*destroy)(struct kernel_graph *g); /* NULL is a no-op */
};

/* The first rows of the model's table (model.h) at inference, in one call that runs them the table's own
 * way (the CPU: cpu_infer.h). model_forward walks the rest of the table from there. */
struct infer_engine {
    /* How many of the table's first rows run() computes: 0 when it computes none. */
    int (*rows)(void);
    /* For B images x (B x MODEL_IN_H x MODEL_IN_W x MODEL_IN_C, this table's memory) under params (the
     * model's parameter array): the output of the last of those rows, NHWC, as the row-by-row pass leaves
     * it in its buffer, into y. */
    void (*run)(const float *params, const float *x, int B, float *y);
};

extern const struct kernels kernels_cpu;

#endif
