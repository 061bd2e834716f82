/* cpu_conv: the CPU table's direct 3x3 convolutions (kernels.conv3x3_*) on oneDNN convolution primitives.
 *
 * Why: im2col + SGEMM writes and re-reads a column matrix nine times the size of the input (33 MB per batch
 * of 32 for conv2d_2) and spent ~12% of a step copying it; oneDNN's brgconv / jit:avx512_core convolutions
 * read NHWC activations directly and measured 2.2x faster over the model's 11 convolution passes at one
 * thread (38 ms vs 84 ms for a batch of 32 with the weights in a format oneDNN picks; trainer/README.md).
 *
 * Activations stay NHWC (as Keras, and as the pooling/dropout kernels expect) and kernels stay HWIO in the
 * model's parameter array; each call reorders the kernel (at most 36,864 values) to and from the blocked
 * layout oneDNN chose for the primitive. Primitives are created once per shape (creation costs
 * milliseconds: JIT code generation) and kept in a small cache for the life of the process. Not
 * thread-safe: one caller at a time, which is how the model uses a kernels table. */
#ifndef TRAINER_CPU_CONV_H
#define TRAINER_CPU_CONV_H

/* Shapes as kernels.h's im2col3x3: x is B x H x W x C, pad 1 ("same") or 0 ("valid"), kernel 3x3xCxcout,
 * y / dy are B x OH x OW x cout with OH = H + 2 pad - 2. */

/* y = act(conv(x, kernel) + bias), act ReLU when relu (a fused post-op), else identity. */
void cpu_conv3x3_forward(const float *x, int B, int H, int W, int C, int pad, const float *kernel,
                         const float *bias, int cout, int relu, float *y);

/* dkernel = gradient of the kernel given the forward input x and dy (overwrites). */
void cpu_conv3x3_grad_kernel(const float *x, const float *dy, int B, int H, int W, int C, int pad, int cout,
                             float *dkernel);

/* dx = gradient of the input (overwrites). */
void cpu_conv3x3_grad_input(const float *dy, const float *kernel, int B, int H, int W, int C, int pad,
                            int cout, float *dx);

#endif
