#include "layers.h"

#include <stddef.h>
#include <string.h>

#include "cpu_conv.h"

int layer_conv3x3_direct(const struct kernels *k) { return k == &kernels_cpu; }

void layer_conv3x3_forward(const struct kernels *k, const float *x, int B, int H, int W, int C, int pad,
                           const float *kernel, const float *bias, int cout, int relu, float *col, float *y)
{
    if (layer_conv3x3_direct(k)) {
        cpu_conv3x3_forward(x, B, H, W, C, pad, kernel, bias, cout, relu, y);
        if (col && col != x)
            memcpy(col, x, sizeof(float) * B * H * W * C);
        return;
    }
    const int P = B * (H + 2 * pad - 2) * (W + 2 * pad - 2);
    k->im2col3x3(x, B, H, W, C, pad, col);
    k->gemm(0, 0, P, cout, 9 * C, col, 9 * C, kernel, cout, 0.0f, y, cout);
    k->bias_act(y, bias, (size_t)P, cout, relu);
}

void layer_conv3x3_backward(const struct kernels *k, const float *dy, int B, int H, int W, int C, int pad,
                            const float *kernel, int cout, float *saved, float *dkernel, float *dx)
{
    if (layer_conv3x3_direct(k)) {
        cpu_conv3x3_grad_kernel(saved, dy, B, H, W, C, pad, cout, dkernel);
        if (dx)
            cpu_conv3x3_grad_input(dy, kernel, B, H, W, C, pad, cout, dx);
        return;
    }
    const int P = B * (H + 2 * pad - 2) * (W + 2 * pad - 2);
    k->gemm(1, 0, 9 * C, cout, P, saved, 9 * C, dy, cout, 0.0f, dkernel, cout);
    if (!dx)
        return;
    k->gemm(0, 1, P, 9 * C, cout, dy, cout, kernel, cout, 0.0f, saved, 9 * C);
    k->col2im3x3(saved, B, H, W, C, pad, dx);
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
