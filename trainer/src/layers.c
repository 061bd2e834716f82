#include "layers.h"

#include <stddef.h>

void layer_conv3x3_forward(const struct kernels *k, const float *x, int B, int H, int W, int C, int pad,
                           const float *kernel, const float *bias, int cout, int relu, float *col, float *y)
{
    const int P = B * (H + 2 * pad - 2) * (W + 2 * pad - 2);
    k->im2col3x3(x, B, H, W, C, pad, col);
    k->gemm(0, 0, P, cout, 9 * C, col, 9 * C, kernel, cout, 0.0f, y, cout);
    k->bias_act(y, bias, (size_t)P, cout, relu);
}

void layer_conv3x3_backward(const struct kernels *k, const float *dy, int B, int H, int W, int C, int pad,
                            const float *kernel, int cout, float *col, float *dkernel, float *dx)
{
    const int P = B * (H + 2 * pad - 2) * (W + 2 * pad - 2);
    k->gemm(1, 0, 9 * C, cout, P, col, 9 * C, dy, cout, 0.0f, dkernel, cout);
    if (!dx)
        return;
    k->gemm(0, 1, P, 9 * C, cout, dy, cout, kernel, cout, 0.0f, col, 9 * C);
    k->col2im3x3(col, B, H, W, C, pad, dx);
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
