/* layers: the model's layers composed from kernels (kernels.h), each with forward and backward, so the
 * model and the tests share one definition. Activation functions (ReLU), dropout and pooling are single
 * kernels and are used directly; the softmax cross-entropy is kernels.softmax_xent. */
#ifndef TRAINER_LAYERS_H
#define TRAINER_LAYERS_H

#include "kernels.h"

/* Conv2D 3x3, stride 1, pad 1 ("same") or 0 ("valid"), NHWC in and out, kernel HWIO (9*C x cout), then
 * bias and optionally ReLU: the table's conv3x3, whose contract for `col` (what backward needs, "saved"
 * below) is in kernels.h: with k->conv_col the im2col matrix, else nothing (backward is given x itself). */
void layer_conv3x3_forward(const struct kernels *k, const float *x, int B, int H, int W, int C, int pad,
                           const float *kernel, const float *bias, int cout, int relu, float *col, float *y);

/* Backward of layer_conv3x3_forward. dy must already be through the activation (kernels.bias_act_grad,
 * which also gives the bias gradient). saved is the forward's col, or x (see kernels.h). Writes dkernel;
 * then, when dx is not NULL, the input gradient. */
void layer_conv3x3_backward(const struct kernels *k, const float *dy, int B, int H, int W, int C, int pad,
                            const float *kernel, int cout, float *saved, float *dkernel, float *dx);

/* Dense: y[B x out] = x[B x in] * kernel[in x out] + bias, optionally ReLU. */
void layer_dense_forward(const struct kernels *k, const float *x, int B, int in, const float *kernel,
                         const float *bias, int out, int relu, float *y);

/* Backward of layer_dense_forward given dy through the activation: dkernel = x^T dy, dx = dy kernel^T
 * (dx may be NULL). */
void layer_dense_backward(const struct kernels *k, const float *dy, const float *x, int B, int in,
                          const float *kernel, int out, float *dkernel, float *dx);

#endif
