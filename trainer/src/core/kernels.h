/* kernels: the compute primitives the model is built from, as a table of function pointers per device.
 *
 * model.c only ever calls through a `struct kernels`, and every buffer it passes was obtained from that
 * table's alloc(), so the CUDA table (kernels_cuda.cu) sits beside the CPU one (kernels_cpu.c) without
 * touching the model, the optimizer or the training loop.
 *
 * The table offers whole layers, each a forward and backward pair (model.h's kinds), so that the model
 * never knows how a table computes them; how a table composes them (GEMMs, im2col, oneDNN) is its own.
 *
 * Layouts (row-major, as Keras):
 *  - activations NHWC: x[((b * H + y) * W + x) * C + c];
 *  - conv kernels HWIO, i.e. a (3*3*Cin) x Cout matrix;
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

#include "core/rng.h"

struct input_engine; /* input_engine.h */
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

    /* The layers, each as a forward and backward pair. A forward's y is act(linear(x) + bias), act ReLU when
     * relu, else identity. A backward is given the forward's x and y, and dy, the gradient w.r.t. y, which it
     * takes through the activation in place (dy[i] = relu && y[i] <= 0 ? 0 : dy[i] * scale, where scale is
     * 1, or 1/(1-rate) when y then went through an inverted dropout in place: dropped units are 0 and stop
     * the gradient like ReLU's zeros do); then it overwrites dbias (the column sums of that dy), dkernel,
     * and dx unless dx is NULL (the model's input needs no gradient). */

    /* Conv2D 3x3, stride 1, pad 1 ("same") or 0 ("valid"), NHWC x (B x H x W x C) to y (B x OH x OW x
     * cout), kernel HWIO (9C x cout). `saved` is the table's own state from forward to backward, of
     * conv3x3_saved() bytes from this table's alloc (NULL when that is 0); backward may overwrite it
     * (scratch). Each table convolves its own way: the CPU with oneDNN's direct and Winograd primitives
     * (cpu_conv.h), reading x again in backward and saving nothing; the GPU with im2col + SGEMM, saving
     * the im2col matrix. */
    size_t (*conv3x3_saved)(int B, int H, int W, int C, int pad);
    void (*conv3x3_forward)(const float *x, int B, int H, int W, int C, int pad, const float *kernel,
                            const float *bias, int cout, int relu, void *saved, float *y);
    void (*conv3x3_backward)(const float *x, const float *y, float *dy, int B, int H, int W, int C, int pad,
                             const float *kernel, int cout, int relu, float scale, void *saved, float *dkernel,
                             float *dbias, float *dx);

    /* Dense: y[B x out] = act(x[B x in] * kernel[in x out] + bias). */
    void (*dense_forward)(const float *x, int B, int in, const float *kernel, const float *bias, int out,
                          int relu, float *y);
    void (*dense_backward)(const float *x, const float *y, float *dy, int B, int in, const float *kernel,
                           int out, int relu, float scale, float *dkernel, float *dbias, float *dx);

    /* MaxPooling2D 2x2, stride 2 (floor: a last odd row/column is dropped), then inverted dropout:
     * y = max * (kept ? 1/(1-rate) : 0), kept = dropout_kept(*key, i, rate), i the index into y, *key in
     * this table's memory. rate 0 (inference) keeps everything and then key and idx may be NULL. idx[i]
     * records, for backward, the argmax (bits 0-1: dy*2+dx, first maximum in row-major order) and whether
     * it was kept (bit 2). Backward overwrites dx (B x H x W x C) from dy (B x H/2 x W/2 x C). */
    void (*pool_dropout_forward)(const float *x, int B, int H, int W, int C, float rate, const uint64_t *key,
                                 float *y, uint8_t *idx);
    void (*pool_dropout_backward)(const float *dy, const uint8_t *idx, int B, int H, int W, int C, float rate,
                                  float *dx);

    /* Dropout after a Dense: in place on its n outputs, same rule and key use as pool_dropout_forward (key
     * may be NULL at rate 0). Its backward is the Dense's (the `scale` above). */
    void (*dropout_forward)(float *x, size_t n, float rate, const uint64_t *key);

    /* The last Activation("softmax") with the loss, forward and backward in one: softmax + categorical
     * cross-entropy as Keras 2.x computes it: p = softmax(z), q = p / sum(p),
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
