/* cpu_conv: the CPU table's 3x3 convolutions on oneDNN convolution primitives and, where oneDNN has no
 * Winograd, on our own (kernels_cpu's Conv2D layer is these, where the CUDA table uses im2col + SGEMM).
 *
 * Why (docs/benchmarks.md, "trainer: CPU speed", has the figures and the machine): for the model's 11
 * convolution passes at batch 32, oneDNN's direct convolutions on NHWC take less than half the time of
 * im2col + SGEMM (the column matrix of conv2d_2 alone is 33 MB), and Winograd F(4x4, 3x3) (jit_wino_4x3)
 * for the layers with 16k channels about a third less again. oneDNN's Winograd exists only for its blocked
 * activation layout and AVX-512, so those layers reorder activations from and to NHWC around each call
 * (a small cost next to the convolution's). On CPUs with
 * AVX2 but not AVX-512 the forward and input-gradient passes of those layers run cpu_wino.h's Winograd
 * F(4x4, 3x3) on NHWC instead (oneDNN's direct AVX2 convolutions already ran near the FMA peak, and so did
 * PyTorch's). conv2d_1 (3 input channels), the kernel gradients, and every layer on CPUs without AVX2 run
 * the direct NHWC convolution. ReLU is fused into the forward pass. Winograd's rounding differs from a
 * direct convolution by ~1e-6 relative, well inside the numpy step test's 1e-4.
 *
 * Activations stay NHWC for the caller (as Keras, and as the pooling/dropout kernels expect) and kernels
 * stay HWIO in the model's parameter array; each call reorders the kernel (at most 36,864 values) to and
 * from the layout of the primitive. Primitives are created once per shape (creation costs milliseconds:
 * JIT code generation) and kept in a small cache for the life of the process. Not thread-safe: one caller
 * at a time, which is how the model uses a kernels table. Results are reproducible for a given thread
 * count (oneDNN partitions work statically). */
#ifndef TRAINER_CPU_CONV_H
#define TRAINER_CPU_CONV_H

/* Shapes as kernels.h's conv3x3_forward: x is B x H x W x C, pad 1 ("same") or 0 ("valid"), kernel 3x3xCxcout,
 * y / dy are B x OH x OW x cout with OH = H + 2 pad - 2. */

/* y = act(conv(x, kernel) + bias), act ReLU when relu (a fused post-op), else identity. */
void cpu_conv3x3_forward(const float *x, int B, int H, int W, int C, int pad, const float *kernel,
                         const float *bias, int cout, int relu, float *y);

/* Whether cpu_conv3x3_forward runs this shape (any batch size) on cpu_wino.h (our AVX2 Winograd: where
 * oneDNN has no Winograd for it and the CPU has AVX2), rather than on a oneDNN primitive. */
int cpu_conv3x3_forward_on_wino(int H, int W, int C, int pad, int cout, int relu);

/* dkernel = gradient of the kernel given the forward input x and dy (overwrites). */
void cpu_conv3x3_grad_kernel(const float *x, const float *dy, int B, int H, int W, int C, int pad, int cout,
                             float *dkernel);

/* dx = gradient of the input (overwrites). */
void cpu_conv3x3_grad_input(const float *dy, const float *kernel, int B, int H, int W, int C, int pad,
                            int cout, float *dx);

#endif
