#include "cpu/cpu_gemm.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

enum cpu_gemm_backend cpu_gemm_choose(int transa, int transb, int M, int N, int K)
{
    (void)transa;
    (void)N;
    (void)K;
    /* dY * W^T of a dense layer at batch size rows: OpenBLAS measured faster (docs/benchmarks.md, "GEMM
     * choice"). */
    if (transb && M <= 64)
        return CPU_GEMM_BLAS;
    return CPU_GEMM_DNNL;
}

void cpu_gemm(enum cpu_gemm_backend backend, int transa, int transb, int M, int N, int K, const float *A,
              int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (backend == CPU_GEMM_AUTO)
        backend = cpu_gemm_choose(transa, transb, M, N, K);
    if (backend == CPU_GEMM_BLAS) {
        cblas_sgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans, transb ? CblasTrans : CblasNoTrans, M,
                    N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    dnnl_status_t st = dnnl_sgemm(transa ? 'T' : 'N', transb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, beta,
                                  C, ldc);
    if (st != dnnl_success) {
        /* Only reachable with inconsistent leading dimensions, i.e. a programming error. */
        fprintf(stderr, "cifar-train: dnnl_sgemm(%c%c, M=%d N=%d K=%d) failed with status %d\n",
                transa ? 'T' : 'N', transb ? 'T' : 'N', M, N, K, (int)st);
        abort();
    }
}

/* OpenBLAS stays at one thread whatever n is: the one product it computes (a dense layer's input gradient)
 * is too small to share, and with n > 1 its own pthreads pool kept spinning beside OpenMP's threads after
 * every call, taking a core from the next layer (docs/benchmarks.md, "Figures behind code comments"). The
 * same fault the PyTorch peer had (OPENBLAS_NUM_THREADS=1 in trainer-bench.sh); here it is fixed in the
 * program, not the environment. */
void cpu_gemm_set_threads(int n)
{
    omp_set_num_threads(n);
    openblas_set_num_threads(1);
}
