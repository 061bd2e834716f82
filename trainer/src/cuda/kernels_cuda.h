/* kernels_cuda: the CUDA implementation of kernels.h (kernels_cuda.cu, built where nvcc is found).
 *
 * - One non-blocking stream per process carries every kernel, copy and cuBLAS call of the table in order;
 *   download() and sync() wait for it. Buffers are cudaMalloc'ed and zero-filled on that stream.
 * - GEMMs are cuBLAS SGEMMs in full FP32 (CUBLAS_DEFAULT_MATH: no TF32), so results agree with the CPU
 *   table within float rounding; kernels_cuda_set_tf32(1) (cifar-train --tf32) allows TF32 tensor cores instead
 *   (faster, about 1e-3 relative error per product). Everything else is the project's own kernels,
 *   following kernels_cpu.c step for step (same dropout draws, same pooling argmax rule).
 * - Reductions use fixed partitions (bias gradients: fixed row chunks, then a fixed tree), so a run is
 *   reproducible on a given GPU model and cuBLAS version.
 * - A CUDA or cuBLAS failure inside a table function is fatal: it prints the failing call with CUDA's
 *   message and exits with status 1 (the functions return nothing, and a failed kernel leaves the CUDA
 *   context unusable anyway). alloc() returns NULL when device memory runs out, as kernels.h asks.
 * - Graphs (kernels.h graph_engine): the stream is captured in thread-local mode and instantiated as one
 *   CUDA graph; cuBLAS works in a workspace of the table's own (cublasSetWorkspace), for plain calls as
 *   well, so captured and plain GEMMs choose alike. A failure inside a capture is reported by
 *   capture_end (NULL, with a one-line warning on stderr), not fatal; a scratch buffer growing inside a
 *   capture is fatal (the caller's warm-up steps must have grown it).
 * - Single-threaded: the table is used from one host thread, the one that called kernels_cuda_open(). */
#ifndef TRAINER_KERNELS_CUDA_H
#define TRAINER_KERNELS_CUDA_H

#include <stddef.h>

#include "core/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How many CUDA devices this process sees; 0 when there is none or no usable driver, and then `why` (may
 * be NULL) says so in CUDA's words. Creates no context. */
int kernels_cuda_device_count(char *why, size_t len);

/* Binds the table to `device` (cudaSetDevice on the calling thread) and creates its stream and cuBLAS
 * handle. Returns 0, or -1 with the reason in err. Must succeed before kernels_cuda is used. */
int kernels_cuda_open(int device, char *err, size_t len);

/* Names `device` (an ordinal among the visible ones) in out: its model, UUID (nvidia-smi's GPU-... form)
 * and PCI bus id, which stay the same whatever CUDA_VISIBLE_DEVICES renumbers. Returns 0, or -1 with
 * CUDA's reason in out. */
int kernels_cuda_describe(int device, char *out, size_t len);

/* GEMMs in TF32 on tensor cores (on != 0: CUBLAS_TF32_TENSOR_OP_MATH) or full FP32 (0, the default).
 * After kernels_cuda_open. */
void kernels_cuda_set_tf32(int on);

/* The table's stream (a cudaStream_t), for benchmarks that time other libraries' calls in its order. */
void *kernels_cuda_stream(void);

/* Releases the stream, the cuBLAS handle and the table's scratch buffers (not the caller's buffers). */
void kernels_cuda_close(void);

extern const struct kernels kernels_cuda;

#ifdef __cplusplus
}
#endif
#endif
