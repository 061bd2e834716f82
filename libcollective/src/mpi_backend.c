/* coll_mpi_backend (backend.h): host-memory collectives over MPI (coll_g.data), called from the progress
 * thread only (or the caller's thread in a process without MPI, where each is a local copy or nothing).
 *
 * Every collective is MPI's nonblocking one, completed by finish() without spinning. Allreduce sums with
 * MPI_Iallreduce, then divides for COLL_AVERAGE, so an element's result depends only
 * on the ranks' values of that element. With two ranks any MPI algorithm computes a+b, which IEEE
 * addition makes exact regardless of order. With three or more, MPI's algorithms add in an order that
 * depends on the message size (ring chunks, segments), so a fused buffer and the same tensor alone could
 * differ in the last bit. For float32 on more than two ranks we therefore reduce with MPI_Alltoallv +
 * MPI_Allgatherv, adding each element in rank order 0, 1, ..., n-1: the same bandwidth as a ring
 * (2(n-1)/n of the data per rank) and bit-identical whatever the fusion. Integers are exact either way. */
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest piece handed to one MPI call: MPI counts are int. */
#define MPI_PIECE ((size_t)1 << 30)

static void *scratch;
static size_t scratch_size;

static MPI_Datatype mpi_type(enum coll_dtype dtype)
{
    switch (dtype) {
    case COLL_FLOAT32: return MPI_FLOAT;
    case COLL_INT32: return MPI_INT32_T;
    case COLL_INT64: return MPI_INT64_T;
    case COLL_UINT8: return MPI_UINT8_T;
    case COLL_FLOAT16:
    case COLL_BFLOAT16: break; /* refused before they get here (queue.c) */
    }
    return MPI_DATATYPE_NULL;
}

int coll_mpi_error(char *err, const char *call, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error code %d", rc);
    snprintf(err, COLL_ERRLEN, "libcollective: %s failed: %s", call, text);
    return COLL_ERR_BACKEND;
}

/* Completes the nonblocking collective that `call` started (returning rc) without spinning: Open MPI's
 * blocking collectives poll the shared-memory queues flat out while a peer is late, on the core that
 * this rank's compute thread needs (20-27% of it in top at 2 ranks x 1 thread). Testing and napping
 * (coll_nap) costs a few wake-ups per collective instead. */
static int finish(int rc, MPI_Request *req, const char *call, char *err)
{
    if (rc != MPI_SUCCESS)
        return coll_mpi_error(err, call, rc);
    double nap = 0;
    for (;;) {
        int done = 0;
        if ((rc = MPI_Test(req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            return coll_mpi_error(err, call, rc);
        if (done)
            return COLL_OK;
        coll_nap(&nap);
    }
}

static int scratch_reserve(size_t bytes, char *err)
{
    if (bytes <= scratch_size)
        return COLL_OK;
    void *p = realloc(scratch, bytes);
    if (!p) {
        snprintf(err, COLL_ERRLEN, "libcollective: no memory for %zu bytes of reduction scratch", bytes);
        return COLL_ERR_NOMEM;
    }
    scratch = p;
    scratch_size = bytes;
    return COLL_OK;
}

void coll_mpi_release(void)
{
    free(scratch);
    scratch = NULL;
    scratch_size = 0;
}

static void divide(void *buf, size_t count, enum coll_dtype dtype, int n)
{
    switch (dtype) {
    case COLL_FLOAT32: for (size_t i = 0; i < count; i++) ((float *)buf)[i] /= (float)n; break;
    case COLL_INT32: for (size_t i = 0; i < count; i++) ((int32_t *)buf)[i] /= n; break;
    case COLL_INT64: for (size_t i = 0; i < count; i++) ((int64_t *)buf)[i] /= n; break;
    case COLL_UINT8: for (size_t i = 0; i < count; i++) ((uint8_t *)buf)[i] /= (uint8_t)n; break;
    case COLL_FLOAT16:
    case COLL_BFLOAT16: break; /* device memory only: never here */
    }
}

/* Rank-ordered float32 allreduce of count (<= MPI_PIECE) elements; see the top of the file. */
static int ordered_allreduce_f32(const float *send, float *recv, size_t count, enum coll_op op, char *err)
{
    int n = coll_g.size, me = coll_g.rank, rc;
    int *counts = malloc(4 * (size_t)n * sizeof(int));
    if (!counts) {
        snprintf(err, COLL_ERRLEN, "libcollective: no memory for %d-rank count tables", n);
        return COLL_ERR_NOMEM;
    }
    int *displs = counts + n, *rcounts = counts + 2 * n, *rdispls = counts + 3 * n;
    for (int j = 0; j < n; j++) {
        displs[j] = (int)(count * (size_t)j / (size_t)n);
        counts[j] = (int)(count * (size_t)(j + 1) / (size_t)n) - displs[j];
    }
    size_t mine = (size_t)counts[me];
    for (int i = 0; i < n; i++) {
        rcounts[i] = (int)mine;
        rdispls[i] = (int)(mine * (size_t)i);
    }
    if ((rc = scratch_reserve(mine * (size_t)n * sizeof(float), err)))
        goto out;
    const float *parts = scratch;
    MPI_Request req;
    rc = MPI_Ialltoallv(send, counts, displs, MPI_FLOAT, scratch, rcounts, rdispls, MPI_FLOAT, coll_g.data, &req);
    if ((rc = finish(rc, &req, "MPI_Ialltoallv", err)))
        goto out;
    float *own = recv + displs[me];
    if (mine)
        memcpy(own, parts, mine * sizeof(float));
    for (int i = 1; i < n; i++)
        for (size_t k = 0; k < mine; k++)
            own[k] += parts[(size_t)i * mine + k];
    if (op == COLL_AVERAGE)
        divide(own, mine, COLL_FLOAT32, n);
    rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, MPI_FLOAT, coll_g.data, &req);
    rc = finish(rc, &req, "MPI_Iallgatherv", err);
out:
    free(counts);
    return rc;
}

static int allreduce(const void *send, void *recv, size_t count, enum coll_dtype dtype, enum coll_op op, char *err)
{
    size_t es = coll_dtype_size(dtype);
    if (!coll_g.use_mpi) {
        if (send != recv && count)
            memcpy(recv, send, count * es);
        return COLL_OK; /* one rank: the sum is the value, and the average divides by 1 */
    }
    for (size_t off = 0; off < count; off += MPI_PIECE) {
        size_t n = count - off < MPI_PIECE ? count - off : MPI_PIECE;
        const char *s = (const char *)send + off * es;
        char *r = (char *)recv + off * es;
        int rc;
        if (dtype == COLL_FLOAT32 && coll_g.size > 2) {
            if ((rc = ordered_allreduce_f32((const float *)s, (float *)r, n, op, err)))
                return rc;
            continue;
        }
        MPI_Request req;
        rc = MPI_Iallreduce(s == r ? MPI_IN_PLACE : s, r, (int)n, mpi_type(dtype), MPI_SUM, coll_g.data, &req);
        if ((rc = finish(rc, &req, "MPI_Iallreduce", err)))
            return rc;
        if (op == COLL_AVERAGE)
            divide(r, n, dtype, coll_g.size);
    }
    return COLL_OK;
}

static int broadcast(void *buf, size_t count, enum coll_dtype dtype, int root, char *err)
{
    if (!coll_g.use_mpi)
        return COLL_OK;
    size_t es = coll_dtype_size(dtype);
    for (size_t off = 0; off < count; off += MPI_PIECE) {
        size_t n = count - off < MPI_PIECE ? count - off : MPI_PIECE;
        MPI_Request req;
        int rc = MPI_Ibcast((char *)buf + off * es, (int)n, mpi_type(dtype), root, coll_g.data, &req);
        if ((rc = finish(rc, &req, "MPI_Ibcast", err)))
            return rc;
    }
    return COLL_OK;
}

static int allgather(const void *send, void *recv, size_t count, enum coll_dtype dtype, char *err)
{
    size_t es = coll_dtype_size(dtype);
    char *own = (char *)recv + (size_t)coll_g.rank * count * es;
    if (!coll_g.use_mpi) {
        if (send != own && count)
            memmove(own, send, count * es);
        return COLL_OK;
    }
    if (count > INT_MAX) {
        snprintf(err, COLL_ERRLEN, "libcollective: allgather of %zu elements per rank exceeds MPI's int count",
                 count);
        return COLL_ERR_ARG;
    }
    MPI_Request req;
    int rc = MPI_Iallgather(send == own ? MPI_IN_PLACE : send, (int)count, mpi_type(dtype), recv, (int)count,
                            mpi_type(dtype), coll_g.data, &req);
    return finish(rc, &req, "MPI_Iallgather", err);
}

int coll_mpi_barrier(char *err)
{
    if (!coll_g.use_mpi)
        return COLL_OK;
    MPI_Request req;
    int rc = MPI_Ibarrier(coll_g.data, &req);
    return finish(rc, &req, "MPI_Ibarrier", err);
}

static int host_alloc(void **p, size_t bytes, char *err)
{
    if (!(*p = malloc(bytes ? bytes : 1))) {
        snprintf(err, COLL_ERRLEN, "libcollective: no memory for %zu bytes of host scratch", bytes);
        return COLL_ERR_NOMEM;
    }
    return COLL_OK;
}

static int host_copy(void *dst, const void *src, size_t bytes, char *err)
{
    (void)err;
    memcpy(dst, src, bytes);
    return COLL_OK;
}

/* Each call above returns complete: nothing is ever queued. */
static int host_sync(char *err)
{
    (void)err;
    return COLL_OK;
}

const struct coll_backend coll_mpi_backend = {
    .name = "MPI",
    .alloc = host_alloc,
    .free = free,
    .copy = host_copy,
    .allreduce = allreduce,
    .broadcast = broadcast,
    .allgather = allgather,
    .sync = host_sync,
};
