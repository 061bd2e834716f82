/* cpu_infer: the CPU table's inference engine (kernels.h: struct infer_engine): the model table's first rows,
 * from the input to the Flatten (convolutions with their ReLU, poolings, the Dropouts that inference
 * skips), as one chain of oneDNN inference primitives run image by image.
 *
 * Why (docs/benchmarks.md, "Inference: the inference engine", batch 32, one thread): row by row, each
 * convolution reorders its NHWC input into oneDNN's blocked layout and its output back (an eighth of a
 * batch's time), and works on the whole batch at once, whose activations (4 MB at conv2d_2) fall
 * out of the core's L2 cache. Here activations stay in the layout each primitive chooses from the first
 * convolution to the Flatten, and one image goes through the chain at a time, where oneDNN picks its
 * Winograd F(2x2, 3x3) kernel for a batch of one (jit_fp32_wino_2x3, AVX-512; elsewhere the direct
 * convolutions of the CPU's ISA). With several threads, each takes whole images (OpenMP, static schedule)
 * and runs the chain on its own, so the result of an image does not depend on the thread count.
 *
 * Where oneDNN has no Winograd but the row-by-row pass runs our own (cpu_conv.h: AVX2 without AVX-512), the
 * chain would have only direct convolutions and the row-by-row pass is faster: there rows() is 0.
 *
 * The numbers differ from the row-by-row pass (cpu_conv.h) by rounding only: Winograd's transforms sum in
 * another order (test_infer.c holds the two to 1e-5 relative). Each call compares the convolution kernels in
 * the parameter array (HWIO) with those it last reordered into the primitives' layouts and reorders them
 * again when they differ, so the parameters may change between calls.
 *
 * Not thread-safe: one caller at a time, as kernels.h's tables are used. */
#ifndef TRAINER_CPU_INFER_H
#define TRAINER_CPU_INFER_H

#include "core/kernels.h"

extern const struct infer_engine cpu_infer;

#endif
