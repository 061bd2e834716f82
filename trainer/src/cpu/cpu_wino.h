/* cpu_wino: Winograd F(4x4, 3x3) convolutions on AVX2 + FMA, on NHWC activations and HWIO kernels, for the
 * CPUs where oneDNN has no Winograd (oneDNN 2.x has it only for AVX-512; cpu_conv.c picks this where
 * oneDNN's refuses a shape and cpu_wino_supported() says yes).
 *
 * Why: on AVX2 both oneDNN's direct convolution and PyTorch's (the same oneDNN) run near the core's FMA
 * peak, so only fewer multiplications make ours faster. F(4x4, 3x3) computes a 4x4 output tile from a
 * 6x6 input tile with 36 multiplications per input/output channel pair instead of 144. Per block of
 * tiles: the input tiles are transformed (V = B^T d B), multiplied by the transformed kernels (U = G g
 * G^T) as 36 small matrix products over the channels (M[p] = V[p] U[p], the bulk of the work, in a 6x16
 * register-blocked FMA kernel), and transformed back (Y = A^T M A) with the bias and ReLU fused. Rounding
 * differs from a direct convolution by ~1e-6 relative (the transforms' constants are small: Lavin & Gray
 * 2016; tests/trainer/test_wino.c checks it against a double-precision direct convolution).
 *
 * Threads: OpenMP over blocks of tiles; each output element is computed by one thread in a fixed order,
 * so results are the same bits at any thread count. Not thread-safe (one caller at a time: the scratch is
 * the module's), as kernels.h's tables are used. */
#ifndef TRAINER_CPU_WINO_H
#define TRAINER_CPU_WINO_H

/* Whether this CPU has AVX2 and FMA, which every function below needs. */
int cpu_wino_supported(void);

/* Whether the functions below take these channel counts (cin a multiple of 8, cout of 16). */
int cpu_wino_shape_ok(int cin, int cout);

/* As cpu_conv.h's forward: x is B x H x W x C, pad 0, 1 or 2, kernel 3x3xCxcout (HWIO), y is B x OH x OW x
 * cout with OH = H + 2 pad - 2; y = act(conv(x, kernel) + bias), act ReLU when relu. Needs
 * cpu_wino_shape_ok(C, cout). */
void cpu_wino_forward(const float *x, int B, int H, int W, int C, int pad, const float *kernel, const float *bias,
                      int cout, int relu, float *y);

/* As cpu_conv.h's grad_input: dx (B x H x W x C, overwritten) from dy (B x OH x OW x cout) for the forward
 * convolution of pad 0 or 1; that is the convolution of dy padded by 2 - pad with the kernel turned by 180
 * degrees and its channels swapped. Needs cpu_wino_shape_ok(cout, C). */
void cpu_wino_grad_input(const float *dy, const float *kernel, int B, int H, int W, int C, int pad, int cout,
                         float *dx);

#endif
