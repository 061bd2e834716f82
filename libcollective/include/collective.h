/* libcollective: data-parallel collectives in the spirit of Horovod, over MPI (host memory) and NCCL
 * (device memory).
 *
 * Contract (details of each call below):
 *  - coll_init() works under `srun --mpi=pmix`, under `mpirun`, and as a single process with no launcher
 *    (size 1, rank 0). Rank/size come from MPI; local rank/size from the launcher's environment
 *    (SLURM_LOCALID/SLURM_NTASKS_PER_NODE..., OMPI_COMM_WORLD_LOCAL_RANK/_SIZE) and are checked against an
 *    MPI shared-memory split; a disagreement is an error.
 *  - Every call returns COLL_OK (0) or a negative coll_status; coll_last_error() gives the message,
 *    including the backend's own (MPI_Error_string / ncclGetErrorString).
 *  - Host buffers go over MPI. Device buffers (CUDA pointers) go over NCCL when coll_init() was asked for a
 *    device (the NCCL backend is the plugin libcollective_nccl.so, built where CUDA and NCCL exist); the
 *    two kinds are told apart per call, and a call mixing them is COLL_ERR_ARG. Initialised for host
 *    memory only, libcollective never loads CUDA, so it cannot recognise a device pointer: every buffer
 *    is then taken as host memory.
 *  - Fusion: tensors queued with the async calls are packed into one buffer of up to COLL_FUSION_THRESHOLD
 *    bytes (environment, default 64 MiB, 0 disables) and reduced together; results are bit-identical to
 *    reducing them one by one.
 *  - Stalls: a watchdog thread (whatever the progress thread is doing) warns when a collective has waited
 *    COLL_STALL_WARNING_SEC (default 60), naming the ranks it waits for where they are known, and after
 *    COLL_STALL_ABORT_SEC (default 600; 0 = never) aborts the job with that message (MPI_Abort, and
 *    ncclCommAbort first with a device). COLL_CHECK=1 (the default; it costs one small message per batch)
 *    verifies that kind, count/type/op/root agree across ranks before each collective; a disagreement
 *    aborts the job naming the ranks and what each asked for, or with COLL_MISMATCH_ABORT=0 fails that
 *    collective on every rank with COLL_ERR_MISMATCH. COLL_CHECK=0 turns the comparison off.
 *    coll_finalize() is a checked barrier: a rank finalizing while another still calls collectives is a
 *    mismatch, never a rank waiting in MPI_Finalize.
 *  - Ordering: like MPI, every rank must issue the same collectives in the same order (blocking and
 *    asynchronous calls share one sequence). A background progress thread negotiates with rank 0 which
 *    queued collectives every rank has reached (Horovod's coordinator), then runs them in order.
 *  - Threads: the calls below may be made from any one thread at a time. libcollective makes its MPI calls
 *    from its progress thread only and asks for MPI_THREAD_SERIALIZED. A program that calls MPI itself
 *    while libcollective runs must call MPI_Init_thread(MPI_THREAD_MULTIPLE) before coll_init(), which then
 *    uses that MPI instead of initialising its own (and coll_finalize() leaves it initialised).
 *  - Device buffers must hold their final values when the call is made: work queued on the legacy default
 *    stream is ordered before libcollective's stream; work on other streams must be synchronised first.
 */
#ifndef COLLECTIVE_H
#define COLLECTIVE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum coll_status {
    COLL_OK = 0,
    COLL_ERR_ARG = -1,      /* bad argument (NULL buffer with count > 0, unknown type or op...) */
    COLL_ERR_BACKEND = -2,  /* MPI or NCCL failed; the message carries its text */
    COLL_ERR_MISMATCH = -3, /* ranks disagree on count, type, op or root (checked mode) */
    COLL_ERR_STATE = -4,    /* not initialised, or already finalised */
    COLL_ERR_NOMEM = -5,
    COLL_ERR_UNSUPPORTED = -6, /* e.g. float16 on the MPI backend, device memory without NCCL */
};

enum coll_dtype { COLL_FLOAT32, COLL_FLOAT16, COLL_BFLOAT16, COLL_INT32, COLL_INT64, COLL_UINT8 };
enum coll_op { COLL_SUM, COLL_AVERAGE };

struct coll_init_opts {
    int use_device; /* 1: pick the GPU of this local rank and set up NCCL; 0: host memory only */
    /* 1: float32 allreduces of host memory that cross hosts travel as float16 (Horovod's Compression.fp16:
     * rounded to nearest even, summed in float32, the result rounded to float16; README); 0: as
     * COLL_COMPRESS says (none by default). Every rank must ask alike. */
    int compress_fp16;
};

int coll_init(const struct coll_init_opts *opts); /* opts may be NULL: host only */
int coll_finalize(void);

/* -1 before coll_init() and after coll_finalize(). */
int coll_rank(void);
int coll_size(void);
int coll_local_rank(void);
int coll_local_size(void);
int coll_device(void); /* the CUDA device of this rank, -1 when none */
/* How the ranks spread (after coll_init): the hosts they span (by host key, README); 1 when float32
 * allreduces of host memory go per host first (hierarchical), 1 when those crossing hosts travel as
 * float16. */
int coll_hosts(void);
int coll_hierarchical(void);
int coll_compressed(void);

/* In-place when sendbuf == recvbuf. count is in elements. */
int coll_allreduce(const void *sendbuf, void *recvbuf, size_t count, enum coll_dtype type, enum coll_op op);
int coll_broadcast(void *buf, size_t count, enum coll_dtype type, int root);
/* recvbuf holds size * count elements, rank r's at offset r * count. */
int coll_allgather(const void *sendbuf, void *recvbuf, size_t count, enum coll_dtype type);
int coll_barrier(void);

/* Asynchronous forms: the call queues the work and returns a handle; coll_wait() completes it. Queued
 * allreduces are fused (see above). Buffers must stay valid and untouched until coll_wait() returns. */
typedef struct coll_request *coll_handle;
int coll_allreduce_async(const void *sendbuf, void *recvbuf, size_t count, enum coll_dtype type,
                         enum coll_op op, coll_handle *handle);
int coll_broadcast_async(void *buf, size_t count, enum coll_dtype type, int root, coll_handle *handle);
int coll_wait(coll_handle handle); /* completes and frees the handle; returns that collective's status */
int coll_wait_all(void);           /* every outstanding handle of this rank (they are freed: do not wait
                                      on them again); returns the first failure's status */
/* Non-blocking check: *done = 1 when the collective has completed (then coll_wait() returns at once). */
int coll_test(coll_handle handle, int *done);

/* Allreduce, then apply: an in-place float32 average or sum of host memory whose reduced values are not
 * written back but handed to fn, which applies them (an optimizer's update, as PyTorch's DDP communication
 * hook with ZeroRedundancyOptimizer does), on libcollective's progress thread while the program goes on.
 *
 * fn(ctx, at, n, reduced, first_rank, nranks): `reduced` holds the reduced values of the n elements at
 * buf position `at` (this rank's buffer; its contents there are not the reduced values), and fn does what
 * these elements' reduced values mean for each rank in [first_rank, first_rank + nranks). Over all ranks'
 * calls every (element, rank) pair comes exactly once:
 *  - buf in node-shared coll_host_alloc memory (every rank on one host): rank r gets only its slice of the
 *    tensor, [count*r/size, count*(r+1)/size), in pieces, with first_rank 0 and nranks = size. So each rank
 *    does 1/size of the work, and what fn updates must be node-shared too: every rank's copy of it
 *    (coll_host_peer), or one copy that every rank uses.
 *  - otherwise (private memory, ranks on several hosts, one process): every rank gets the whole tensor,
 *    reduced over MPI in place in buf, once, with first_rank = this rank and nranks 1.
 * The reduced values are bit-identical to coll_allreduce's. fn runs on libcollective's progress thread
 * (in one process without a launcher: in the call itself): it must not call libcollective, and may touch
 * only memory the program leaves alone until the collective completes on every rank (other ranks' copies
 * included). The collective completes, on every rank, once every rank's calls have returned. Every rank
 * must call it where the others call it, with the same count and op (checked like the rest); a rank
 * calling coll_allreduce_async there instead is a mismatch. Device memory: COLL_ERR_UNSUPPORTED. */
typedef void (*coll_apply_fn)(void *ctx, float *at, size_t n, const float *reduced, int first_rank, int nranks);
int coll_allreduce_apply_async(float *buf, size_t count, enum coll_op op, coll_apply_fn fn, void *ctx,
                               coll_handle *handle);

/* Host memory for buffers that are allreduced in place again and again (a model's gradients). Collective:
 * every rank calls it, in the same order, with the same size (a difference fails the call on every rank,
 * naming both). When every rank runs on one host (the same host name and kernel boot id, NCCL's rule, or
 * the same COLL_HOST_ID; a launcher's nodes do not matter, so two slurmd on one machine count as one
 * host), the ranks map each other's buffers (POSIX shared memory, unlinked before the call returns), and an
 * in-place float32 allreduce of a tensor inside the buffer sums straight out of the ranks' memory, with no
 * MPI message and no copy; each rank must then pass the tensor at the same offset in its buffer (checked
 * with COLL_CHECK=1 like count and type). Otherwise (ranks on several hosts, one process, COLL_SHM=0, or a
 * host where shared memory cannot be had, which the failing rank says on stderr) it is private zeroed
 * memory whose collectives go through MPI as usual; every rank gets the same kind. Either way the memory is
 * zero-filled, page-aligned, and the results are bit-identical. NULL on failure (coll_last_error()).
 * coll_host_free() releases it, before or after coll_finalize(), once no collective on it is outstanding;
 * it is local, not collective. coll_host_shared() says which kind p (a pointer coll_host_alloc returned,
 * or into its buffer) is: 1 node-shared, 0 private or not coll_host_alloc's memory. */
void *coll_host_alloc(size_t bytes);
int coll_host_free(void *p);
int coll_host_shared(const void *p);
/* Where rank `rank`'s copy of what p points to lies in this process: p itself for this rank (node-shared
 * or not), the same byte of that rank's buffer as mapped here when p is in a node-shared coll_host_alloc
 * buffer, NULL otherwise. */
void *coll_host_peer(const void *p, int rank);

const char *coll_last_error(void);
/* CPU seconds that libcollective's own threads (progress and watchdog) have used since coll_init(); 0
 * when none run. For benchmarks: what the collectives cost the cores they share with the program. */
double coll_thread_cpu_seconds(void);
size_t coll_dtype_size(enum coll_dtype type);

#ifdef __cplusplus
}
#endif
#endif
