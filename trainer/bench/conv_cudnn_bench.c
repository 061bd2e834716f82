/* conv-cudnn-bench: each convolution layer of the model, forward and backward, with the CUDA table's own
 * layer (kernels.h conv3x3_forward/backward of kernels_cuda: im2col + cuBLAS SGEMM, col2im) and with cuDNN (the fastest algorithm
 * cudnnFind*AlgorithmEx reports for that layer), on the same stream, with the same warm-up and timing loop:
 * WARMUP runs, then REPS runs each timed by a pair of cudaEvents, median printed.
 *
 *   conv-cudnn-bench [BATCH [fp32|tf32]]     default 32 fp32
 *
 * fp32: cuBLAS in full FP32 (the table's default) against cuDNN's CUDNN_FMA_MATH (no tensor cores; cuDNN's
 * default math would allow TF32 on this GPU); tf32: --tf32's cuBLAS TF32 against CUDNN_TENSOR_OP_MATH.
 * Backward is the kernel gradient plus, except for conv2d_1 (whose input needs none, as in the model), the
 * input gradient: conv3x3_backward against cudnnConvolutionBackwardFilter + BackwardData. ReLU is left
 * out on both sides; ours includes the bias (its add in forward, its gradient in backward: one pass over y
 * each), which cuDNN's side leaves out, since the table offers whole layers only. cuDNN's kernel is KRSC (its NHWC filter layout), ours HWIO: the
 * layout changes no timing here, and using cuDNN would need a 9*Cin*Cout-float transposed copy per step.
 * Where the machine has no GPU: prints "conv-cudnn-bench: skipped: no GPU (...)" and exits 0. */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/kernels_cuda.h"
#include "core/model.h"

enum { WARMUP = 10, REPS = 50 };

static void die(const char *what, const char *why)
{
    fprintf(stderr, "conv-cudnn-bench: %s: %s\n", what, why);
    exit(1);
}

#define CU(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) die(#call, cudaGetErrorString(e_)); } while (0)
#define DNN(call) do { cudnnStatus_t s_ = (call); if (s_ != CUDNN_STATUS_SUCCESS) die(#call, cudnnGetErrorString(s_)); } while (0)

struct layer {
    const char *name;
    int H, W, C, pad, cout, need_dx;
};

/* The model's convolutions, from its table (model.h): input shape (the previous layer's output), padding,
 * filters; the first needs no input gradient. Returns how many. */
static size_t conv_layers(struct layer *out, size_t max)
{
    size_t n = 0;
    int h = MODEL_IN_H, w = MODEL_IN_W, c = MODEL_IN_C;
    for (int i = 0; i < model_nlayers() && n < max; i++) {
        const struct model_layer *ml = model_layer(i);
        if (ml->kind == MODEL_CONV) {
            out[n] = (struct layer){ml->name, h, w, c, ml->pad, ml->units, n > 0};
            n++;
        }
        h = ml->h, w = ml->w, c = ml->c;
    }
    return n;
}

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* What one timed run does, on `stream`. */
typedef void (*run_fn)(void *ctx);

/* The loop both sides go through: WARMUP runs, then REPS runs between events; the median in ms. */
static float time_median(cudaStream_t stream, run_fn run, void *ctx)
{
    cudaEvent_t start, stop;
    CU(cudaEventCreate(&start));
    CU(cudaEventCreate(&stop));
    for (int i = 0; i < WARMUP; i++)
        run(ctx);
    float ms[REPS];
    for (int i = 0; i < REPS; i++) {
        CU(cudaEventRecord(start, stream));
        run(ctx);
        CU(cudaEventRecord(stop, stream));
        CU(cudaEventSynchronize(stop));
        CU(cudaEventElapsedTime(&ms[i], start, stop));
    }
    CU(cudaEventDestroy(start));
    CU(cudaEventDestroy(stop));
    qsort(ms, REPS, sizeof *ms, cmp_float);
    return ms[REPS / 2];
}

struct bufs {
    const struct layer *l;
    int B;
    float *x, *w, *bias, *y, *dy, *dw, *dbias, *dx, *col;
    /* cuDNN */
    cudnnHandle_t dnn;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdFilterAlgo_t bwd_w;
    cudnnConvolutionBwdDataAlgo_t bwd_x;
    void *ws;
    size_t ws_size;
};

static void ours_forward(void *v)
{
    struct bufs *b = v;
    const struct layer *l = b->l;
    kernels_cuda.conv3x3_forward(b->x, b->B, l->H, l->W, l->C, l->pad, b->w, b->bias, l->cout, 0, b->col, b->y);
}

static void ours_backward(void *v)
{
    struct bufs *b = v;
    const struct layer *l = b->l;
    kernels_cuda.conv3x3_backward(b->x, b->y, b->dy, b->B, l->H, l->W, l->C, l->pad, b->w, l->cout, 0, 1.0f, b->col,
                                  b->dw, b->dbias, l->need_dx ? b->dx : NULL);
}

static void dnn_forward(void *v)
{
    struct bufs *b = v;
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnConvolutionForward(b->dnn, &one, b->xd, b->x, b->wd, b->w, b->cd, b->fwd, b->ws, b->ws_size, &zero,
                                b->yd, b->y));
}

static void dnn_backward(void *v)
{
    struct bufs *b = v;
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnConvolutionBackwardFilter(b->dnn, &one, b->xd, b->x, b->yd, b->dy, b->cd, b->bwd_w, b->ws, b->ws_size,
                                       &zero, b->wd, b->dw));
    if (b->l->need_dx)
        DNN(cudnnConvolutionBackwardData(b->dnn, &one, b->wd, b->w, b->yd, b->dy, b->cd, b->bwd_x, b->ws, b->ws_size,
                                         &zero, b->xd, b->dx));
}

static void *dev(size_t floats)
{
    void *p = kernels_cuda.alloc(floats * sizeof(float));
    if (!p)
        die("alloc", "out of device memory");
    return p;
}

/* cudnnFind* tries every algorithm (in a workspace of up to `limit` bytes) and returns them fastest first. */
static void find_algorithms(struct bufs *b, size_t limit)
{
    int n;
    cudnnConvolutionFwdAlgoPerf_t f[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DNN(cudnnFindConvolutionForwardAlgorithmEx(b->dnn, b->xd, b->x, b->wd, b->w, b->cd, b->yd, b->y,
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, f, b->ws, limit));
    if (n < 1 || f[0].status != CUDNN_STATUS_SUCCESS)
        die("cudnnFindConvolutionForwardAlgorithmEx", "no algorithm");
    b->fwd = f[0].algo;
    size_t need = f[0].memory;
    cudnnConvolutionBwdFilterAlgoPerf_t w[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(b->dnn, b->xd, b->x, b->yd, b->dy, b->cd, b->wd, b->dw,
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, w, b->ws, limit));
    if (n < 1 || w[0].status != CUDNN_STATUS_SUCCESS)
        die("cudnnFindConvolutionBackwardFilterAlgorithmEx", "no algorithm");
    b->bwd_w = w[0].algo;
    need = w[0].memory > need ? w[0].memory : need;
    cudnnConvolutionBwdDataAlgoPerf_t d[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DNN(cudnnFindConvolutionBackwardDataAlgorithmEx(b->dnn, b->wd, b->w, b->yd, b->dy, b->cd, b->xd, b->dx,
                                                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, d, b->ws, limit));
    if (n < 1 || d[0].status != CUDNN_STATUS_SUCCESS)
        die("cudnnFindConvolutionBackwardDataAlgorithmEx", "no algorithm");
    b->bwd_x = d[0].algo;
    need = d[0].memory > need ? d[0].memory : need;
    b->ws_size = need;
}

int main(int argc, char **argv)
{
    const int B = argc > 1 ? atoi(argv[1]) : 32;
    const int tf32 = argc > 2 && strcmp(argv[2], "tf32") == 0;
    char why[256];
    if (B <= 0 || (argc > 2 && !tf32 && strcmp(argv[2], "fp32") != 0)) {
        fprintf(stderr, "usage: conv-cudnn-bench [BATCH [fp32|tf32]]\n");
        return 2;
    }
    if (kernels_cuda_device_count(why, sizeof why) == 0) {
        printf("conv-cudnn-bench: skipped: no GPU (%s)\n", why);
        return 0;
    }
    if (kernels_cuda_open(0, why, sizeof why) != 0)
        die("kernels_cuda_open", why);
    kernels_cuda_set_tf32(tf32);
    cudaStream_t stream = kernels_cuda_stream();
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, 0));
    printf("conv-cudnn-bench: %s, cuDNN %zu, batch %d, %s; median of %d after %d warm-up runs (ms)\n", prop.name,
           cudnnGetVersion(), B, tf32 ? "TF32 (cuBLAS TF32, cuDNN tensor-op math)" : "FP32 (cuBLAS FP32, cuDNN FMA math)",
           REPS, WARMUP);
    printf("%-9s %10s %10s %-7s %10s %10s %-7s  cuDNN algorithms (fwd, bwd filter, bwd data)\n", "layer", "fwd ours",
           "fwd cuDNN", "faster", "bwd ours", "bwd cuDNN", "faster");
    const size_t ws_limit = (size_t)512 << 20;
    struct layer layers[16];
    const size_t nconv = conv_layers(layers, sizeof layers / sizeof *layers);
    for (size_t i = 0; i < nconv; i++) {
        const struct layer *l = &layers[i];
        const int OH = l->H + 2 * l->pad - 2, OW = l->W + 2 * l->pad - 2;
        const size_t nx = (size_t)B * l->H * l->W * l->C, ny = (size_t)B * OH * OW * l->cout,
                     nw = (size_t)9 * l->C * l->cout;
        struct bufs b = {.l = l, .B = B};
        b.x = dev(nx), b.dx = dev(nx), b.y = dev(ny), b.dy = dev(ny), b.w = dev(nw), b.dw = dev(nw);
        b.bias = dev(l->cout), b.dbias = dev(l->cout);
        b.col = dev(kernels_cuda.conv3x3_saved(B, l->H, l->W, l->C, l->pad) / sizeof(float));
        /* Contents do not change the timings; small values keep everything finite. */
        CU(cudaMemsetAsync(b.x, 0x3c, nx * sizeof(float), stream));
        CU(cudaMemsetAsync(b.w, 0x3c, nw * sizeof(float), stream));
        CU(cudaMemsetAsync(b.dy, 0x3c, ny * sizeof(float), stream));
        DNN(cudnnCreate(&b.dnn));
        DNN(cudnnSetStream(b.dnn, stream));
        DNN(cudnnCreateTensorDescriptor(&b.xd));
        DNN(cudnnCreateTensorDescriptor(&b.yd));
        DNN(cudnnCreateFilterDescriptor(&b.wd));
        DNN(cudnnCreateConvolutionDescriptor(&b.cd));
        DNN(cudnnSetTensor4dDescriptor(b.xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, B, l->C, l->H, l->W));
        DNN(cudnnSetTensor4dDescriptor(b.yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, B, l->cout, OH, OW));
        DNN(cudnnSetFilter4dDescriptor(b.wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, l->cout, l->C, 3, 3));
        DNN(cudnnSetConvolution2dDescriptor(b.cd, l->pad, l->pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
        DNN(cudnnSetConvolutionMathType(b.cd, tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
        CU(cudaMalloc(&b.ws, ws_limit));
        find_algorithms(&b, ws_limit);
        const float of = time_median(stream, ours_forward, &b), df = time_median(stream, dnn_forward, &b);
        const float ob = time_median(stream, ours_backward, &b), db = time_median(stream, dnn_backward, &b);
        printf("%-9s %10.4f %10.4f %-7s %10.4f %10.4f %-7s  %d, %d, %d%s\n", l->name, of, df, of <= df ? "ours" : "cuDNN",
               ob, db, ob <= db ? "ours" : "cuDNN", (int)b.fwd, (int)b.bwd_w, (int)b.bwd_x,
               l->need_dx ? "" : " (no input gradient)");
        CU(cudaFree(b.ws));
        cudnnDestroyConvolutionDescriptor(b.cd);
        cudnnDestroyFilterDescriptor(b.wd);
        cudnnDestroyTensorDescriptor(b.yd);
        cudnnDestroyTensorDescriptor(b.xd);
        cudnnDestroy(b.dnn);
        float *all[] = {b.x, b.dx, b.y, b.dy, b.w, b.dw, b.bias, b.dbias, b.col};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            kernels_cuda.release(all[k]);
    }
    kernels_cuda_close();
    return 0;
}
