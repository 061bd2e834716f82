/* The NCCL backend, built into the plugin libcollective_nccl.so (see nccl_plugin.h): one communicator
 * (none for a single rank), one CUDA stream, collectives and fusion-buffer copies queued on that stream.
 * Plain C against the CUDA runtime and NCCL headers; no kernels of its own (COLL_AVERAGE is NCCL's ncclAvg).
 *
 * Latency: cudaSetDevice is made once per calling thread (it is per-thread state, and the calls come from
 * the progress thread or the caller), and sync() waits only when something was queued since the last
 * one, so an in-place single-rank allreduce costs no CUDA call at all. */
#include "nccl_plugin.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static ncclComm_t comm; /* NULL with a single rank */
static cudaStream_t stream;
static int device = -1;
static int queued;                           /* work on `stream` since the last sync() */
static _Thread_local int thread_device = -1; /* the device this thread last bound */

_Static_assert(sizeof(ncclUniqueId) == COLL_NCCL_ID_BYTES, "COLL_NCCL_ID_BYTES must match ncclUniqueId");

static int cuda_fail(cudaError_t e, const char *call, char *err)
{
    snprintf(err, COLL_BACKEND_ERRLEN, "libcollective: %s failed: %s (%s)", call, cudaGetErrorString(e),
             cudaGetErrorName(e));
    return COLL_ERR_BACKEND;
}

static int nccl_fail(ncclResult_t r, const char *call, char *err)
{
    const char *last = comm ? ncclGetLastError(comm) : ncclGetLastError(NULL);
    snprintf(err, COLL_BACKEND_ERRLEN, "libcollective: %s failed: %s%s%s", call, ncclGetErrorString(r),
             last && *last ? ": " : "", last ? last : "");
    return COLL_ERR_BACKEND;
}

#define CUDA(call)                                                                                            \
    do {                                                                                                      \
        cudaError_t e_ = (call);                                                                              \
        if (e_ != cudaSuccess)                                                                                \
            return cuda_fail(e_, #call, err);                                                                 \
    } while (0)
#define NCCL(call)                                                                                            \
    do {                                                                                                      \
        ncclResult_t r_ = (call);                                                                             \
        if (r_ != ncclSuccess)                                                                                \
            return nccl_fail(r_, #call, err);                                                                 \
    } while (0)

/* NCCL's type and its size in bytes (the plugin links nothing of libcollective, so not coll_dtype_size). */
static size_t nccl_type(enum coll_dtype t, ncclDataType_t *out)
{
    switch (t) {
    case COLL_FLOAT32: *out = ncclFloat32; return 4;
    case COLL_FLOAT16: *out = ncclFloat16; return 2;
    case COLL_BFLOAT16: *out = ncclBfloat16; return 2;
    case COLL_INT32: *out = ncclInt32; return 4;
    case COLL_INT64: *out = ncclInt64; return 8;
    case COLL_UINT8: *out = ncclUint8; return 1;
    }
    return 0;
}

/* Declares var (the NCCL type) and var##_bytes (its size), or fails the call. */
#define TYPE(t, var, err)                                                                                     \
    ncclDataType_t var;                                                                                       \
    const size_t var##_bytes = nccl_type(t, &var);                                                            \
    if (!var##_bytes) {                                                                                       \
        snprintf(err, COLL_BACKEND_ERRLEN, "libcollective: data type %d has no NCCL equivalent", (int)(t));   \
        return COLL_ERR_ARG;                                                                                  \
    }

/* Binds the calling thread to our device, once per thread. */
static int bind(char *err)
{
    if (thread_device != device) {
        CUDA(cudaSetDevice(device));
        thread_device = device;
    }
    return COLL_OK;
}

#define BIND(err)                                                                                             \
    do {                                                                                                      \
        int rc_ = bind(err);                                                                                  \
        if (rc_)                                                                                              \
            return rc_;                                                                                       \
    } while (0)

/* A single rank's collective: the data stays, out of place it is copied. */
static int local_copy(void *dst, const void *src, size_t bytes, char *err)
{
    if (dst == src || !bytes)
        return COLL_OK;
    CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    queued = 1;
    return COLL_OK;
}

static int device_count(int *count, char *err)
{
    cudaError_t e = cudaGetDeviceCount(count);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
        *count = 0; /* a machine without a GPU (or driver): "no device", not a failure */
        (void)cudaGetLastError();
        return COLL_OK;
    }
    CUDA(e);
    return COLL_OK;
}

static int unique_id(unsigned char id[COLL_NCCL_ID_BYTES], char *err)
{
    NCCL(ncclGetUniqueId((ncclUniqueId *)id));
    return COLL_OK;
}

static int open_comm(int dev, const unsigned char id[COLL_NCCL_ID_BYTES], int rank, int size, char *err)
{
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    device = dev;
    thread_device = -1;
    BIND(err);
    CUDA(cudaStreamCreate(&stream)); /* a blocking stream: ordered after the legacy default stream */
    if (size > 1)
        NCCL(ncclCommInitRank(&comm, size, uid, rank));
    return COLL_OK;
}

static void close_comm(void)
{
    if (comm)
        ncclCommDestroy(comm);
    if (stream)
        cudaStreamDestroy(stream);
    comm = NULL;
    stream = NULL;
    device = -1;
    queued = 0;
}

static int is_device_ptr(const void *p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

static int alloc(void **p, size_t bytes, char *err)
{
    BIND(err);
    CUDA(cudaMalloc(p, bytes));
    return COLL_OK;
}

static void release(void *p)
{
    cudaFree(p);
}

static int copy(void *dst, const void *src, size_t bytes, char *err)
{
    BIND(err);
    CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    queued = 1;
    return COLL_OK;
}

static int allreduce(const void *send, void *recv, size_t count, enum coll_dtype type, enum coll_op op, char *err)
{
    TYPE(type, t, err);
    BIND(err);
    if (!comm)
        return local_copy(recv, send, count * t_bytes, err);
    NCCL(ncclAllReduce(send, recv, count, t, op == COLL_AVERAGE ? ncclAvg : ncclSum, comm, stream));
    queued = 1;
    return COLL_OK;
}

static int broadcast(void *buf, size_t count, enum coll_dtype type, int root, char *err)
{
    TYPE(type, t, err);
    BIND(err);
    (void)t_bytes;
    if (!comm)
        return COLL_OK; /* a single rank is its own root */
    NCCL(ncclBroadcast(buf, buf, count, t, root, comm, stream));
    queued = 1;
    return COLL_OK;
}

static int allgather(const void *send, void *recv, size_t count, enum coll_dtype type, char *err)
{
    TYPE(type, t, err);
    BIND(err);
    if (!comm)
        return local_copy(recv, send, count * t_bytes, err);
    NCCL(ncclAllGather(send, recv, count, t, comm, stream));
    queued = 1;
    return COLL_OK;
}

/* Polls rather than cudaStreamSynchronize: a NCCL kernel whose peer died never finishes, and only a
 * poll sees the communicator's asynchronous error (a broken connection) to abort it. Between polls the
 * thread sleeps (50 us), so waiting costs no core; the watchdog (watchdog.c) calls abort_comm() when a
 * peer is merely stopped and no error ever comes. */
static int sync_stream(char *err)
{
    if (!queued)
        return COLL_OK;
    BIND(err);
    for (;;) {
        cudaError_t e = cudaStreamQuery(stream);
        if (e == cudaSuccess)
            break;
        if (e != cudaErrorNotReady)
            return cuda_fail(e, "cudaStreamQuery", err);
        if (comm) {
            ncclResult_t async = ncclSuccess;
            NCCL(ncclCommGetAsyncError(comm, &async));
            if (async != ncclSuccess && async != ncclInProgress) {
                int rc = nccl_fail(async, "NCCL (asynchronous error)", err);
                ncclCommAbort(comm);
                comm = NULL;
                return rc;
            }
        }
        nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
    }
    queued = 0;
    return COLL_OK;
}

/* From the watchdog thread while the progress thread may be blocked in NCCL: NCCL documents
 * ncclCommAbort as the way to free a communicator whose operations hang. The job is being aborted, so
 * the communicator is not used again. */
static void abort_comm(void)
{
    if (comm)
        ncclCommAbort(comm);
}

static const struct coll_nccl_plugin plugin = {
    .abi = COLL_NCCL_PLUGIN_ABI,
    .device_count = device_count,
    .unique_id = unique_id,
    .open = open_comm,
    .close = close_comm,
    .is_device_ptr = is_device_ptr,
    .ops =
        {
            .name = "NCCL",
            .alloc = alloc,
            .free = release,
            .copy = copy,
            .allreduce = allreduce,
            .broadcast = broadcast,
            .allgather = allgather,
            .sync = sync_stream,
        },
    .abort = abort_comm,
};

const struct coll_nccl_plugin *coll_nccl_plugin(void)
{
    return &plugin;
}
