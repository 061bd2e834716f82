/* The NCCL backend, built into the plugin libcollective_nccl.so (see nccl_plugin.h): one communicator,
 * one CUDA stream, collectives and fusion-buffer copies queued on that stream. Plain C against the CUDA
 * runtime and NCCL headers; no kernels of its own (COLL_AVERAGE is NCCL's ncclAvg). */
#include "nccl_plugin.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

static ncclComm_t comm;
static cudaStream_t stream;
static int device = -1;

_Static_assert(sizeof(ncclUniqueId) == COLL_NCCL_ID_BYTES, "COLL_NCCL_ID_BYTES must match ncclUniqueId");

static int cuda_fail(cudaError_t e, const char *call, char *err)
{
    snprintf(err, COLL_PLUGIN_ERRLEN, "libcollective: %s failed: %s (%s)", call, cudaGetErrorString(e),
             cudaGetErrorName(e));
    return COLL_ERR_BACKEND;
}

static int nccl_fail(ncclResult_t r, const char *call, char *err)
{
    const char *last = comm ? ncclGetLastError(comm) : ncclGetLastError(NULL);
    snprintf(err, COLL_PLUGIN_ERRLEN, "libcollective: %s failed: %s%s%s", call, ncclGetErrorString(r),
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

static int nccl_type(enum coll_dtype t, ncclDataType_t *out)
{
    switch (t) {
    case COLL_FLOAT32: *out = ncclFloat32; return 1;
    case COLL_FLOAT16: *out = ncclFloat16; return 1;
    case COLL_BFLOAT16: *out = ncclBfloat16; return 1;
    case COLL_INT32: *out = ncclInt32; return 1;
    case COLL_INT64: *out = ncclInt64; return 1;
    case COLL_UINT8: *out = ncclUint8; return 1;
    }
    return 0;
}

#define TYPE(t, var, err)                                                                                     \
    ncclDataType_t var;                                                                                       \
    if (!nccl_type(t, &var)) {                                                                                \
        snprintf(err, COLL_PLUGIN_ERRLEN, "libcollective: data type %d has no NCCL equivalent", (int)(t));   \
        return COLL_ERR_ARG;                                                                                  \
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
    CUDA(cudaSetDevice(dev));
    device = dev;
    CUDA(cudaStreamCreate(&stream)); /* a blocking stream: ordered after the legacy default stream */
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
    CUDA(cudaSetDevice(device));
    CUDA(cudaMalloc(p, bytes));
    return COLL_OK;
}

static void release(void *p)
{
    cudaFree(p);
}

static int copy(void *dst, const void *src, size_t bytes, char *err)
{
    CUDA(cudaSetDevice(device));
    CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    return COLL_OK;
}

static int allreduce(const void *send, void *recv, size_t count, enum coll_dtype type, enum coll_op op, char *err)
{
    TYPE(type, t, err);
    CUDA(cudaSetDevice(device));
    NCCL(ncclAllReduce(send, recv, count, t, op == COLL_AVERAGE ? ncclAvg : ncclSum, comm, stream));
    return COLL_OK;
}

static int broadcast(void *buf, size_t count, enum coll_dtype type, int root, char *err)
{
    TYPE(type, t, err);
    CUDA(cudaSetDevice(device));
    NCCL(ncclBroadcast(buf, buf, count, t, root, comm, stream));
    return COLL_OK;
}

static int allgather(const void *send, void *recv, size_t count, enum coll_dtype type, char *err)
{
    TYPE(type, t, err);
    CUDA(cudaSetDevice(device));
    NCCL(ncclAllGather(send, recv, count, t, comm, stream));
    return COLL_OK;
}

static int sync_stream(char *err)
{
    CUDA(cudaSetDevice(device));
    CUDA(cudaStreamSynchronize(stream));
    ncclResult_t async = ncclSuccess;
    NCCL(ncclCommGetAsyncError(comm, &async));
    if (async != ncclSuccess)
        return nccl_fail(async, "NCCL (asynchronous error)", err);
    return COLL_OK;
}

static const struct coll_nccl_plugin plugin = {
    .abi = COLL_NCCL_PLUGIN_ABI,
    .device_count = device_count,
    .unique_id = unique_id,
    .open = open_comm,
    .close = close_comm,
    .is_device_ptr = is_device_ptr,
    .alloc = alloc,
    .free = release,
    .copy = copy,
    .allreduce = allreduce,
    .broadcast = broadcast,
    .allgather = allgather,
    .sync = sync_stream,
};

const struct coll_nccl_plugin *coll_nccl_plugin(void)
{
    return &plugin;
}
