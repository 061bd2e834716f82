#include "layers.h"

#include <stddef.h>

void layer_conv3x3_forward(const struct kernels *k, const float *x, int B, int H, int W, int C, int pad,
                           const float *kernel, const float *bias, int cout, int relu, float *col, float *y)
{
    k->conv3x3(x, B, H, W, C, pad, kernel, bias, cout, relu, col, y);
}

void layer_conv3x3_backward(const struct kernels *k, const float *dy, int B, int H, int W, int C, int pad,
                            const float *kernel, int cout, float *saved, float *dkernel, float *dx)
{
    k->conv3x3_grad(dy, B, H, W, C, pad, kernel, cout, saved, dkernel, dx);
}

void layer_dense_forward(const struct kernels *k, const float *x, int B, int in, const float *kernel,
                         const float *bias, int out, int relu, float *y)
{
    k->gemm(0, 0, B, out, in, x, in, kernel, out, 0.0f, y, out);
    k->bias_act(y, bias, (size_t)B, out, relu);
}

void layer_dense_backward(const struct kernels *k, const float *dy, const float *x, int B, int in,
                          const float *kernel, int out, float *dkernel, float *dx)
{
    k->gemm(1, 0, in, out, B, x, in, dy, out, 0.0f, dkernel, out);
    if (dx)
        k->gemm(0, 1, B, in, out, dy, out, kernel, out, 0.0f, dx, in);
}
