/* cpu_gemm: the CPU SGEMM behind kernels_cpu.gemm, choosing per shape between oneDNN's dnnl_sgemm and
 * OpenBLAS's cblas_sgemm.
 *
 * Why two: on AVX-512 CPUs oneDNN dispatches its AVX-512 kernels by itself and
 * runs this model's im2col shapes at 1.3-2.5x OpenBLAS (which environments often hold to AVX2 with
 * OPENBLAS_CORETYPE=Haswell), while OpenBLAS is ahead for the dense layer's small-M, transposed-B product.
 * The rule is fixed (no run-time autotuning) so that results are reproducible run to run; see
 * docs/benchmarks.md ("trainer: GEMM choice") for the measurements behind it. */
#ifndef TRAINER_CPU_GEMM_H
#define TRAINER_CPU_GEMM_H

enum cpu_gemm_backend { CPU_GEMM_AUTO, CPU_GEMM_DNNL, CPU_GEMM_BLAS };

/* Row-major C = op(A) op(B) + beta C; backend AUTO applies the rule above. */
void cpu_gemm(enum cpu_gemm_backend backend, int transa, int transb, int M, int N, int K, const float *A,
              int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* The backend AUTO picks for a shape. */
enum cpu_gemm_backend cpu_gemm_choose(int transa, int transb, int M, int N, int K);

/* Thread count for both libraries. */
void cpu_gemm_set_threads(int n);

#endif
