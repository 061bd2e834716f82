/* Host-memory collectives over MPI (coll_g.data), called from the progress thread only.
 *
 * Allreduce sums with MPI_Allreduce, then divides for COLL_AVERAGE, so an element's result depends only
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

static MPI_Datatype mpi_type(int64_t dtype)
{
    switch (dtype) {
    case COLL_FLOAT32: return MPI_FLOAT;
    case COLL_INT32: return MPI_INT32_T;
    case COLL_INT64: return MPI_INT64_T;
    case COLL_UINT8: return MPI_UINT8_T;
    }
    return MPI_DATATYPE_NULL; /* float16/bfloat16 are refused before they get here */
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

void coll_host_release(void)
{
    free(scratch);
    scratch = NULL;
    scratch_size = 0;
}

static void divide(void *buf, size_t count, int64_t dtype, int n)
{
    switch (dtype) {
    case COLL_FLOAT32: for (size_t i = 0; i < count; i++) ((float *)buf)[i] /= (float)n; break;
    case COLL_INT32: for (size_t i = 0; i < count; i++) ((int32_t *)buf)[i] /= n; break;
    case COLL_INT64: for (size_t i = 0; i < count; i++) ((int64_t *)buf)[i] /= n; break;
    case COLL_UINT8: for (size_t i = 0; i < count; i++) ((uint8_t *)buf)[i] /= (uint8_t)n; break;
    }
}

/* Rank-ordered float32 allreduce of count (<= MPI_PIECE) elements; see the top of the file. */
static int ordered_allreduce_f32(const float *send, float *recv, size_t count, int64_t op, char *err)
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
    rc = MPI_Alltoallv(send, counts, displs, MPI_FLOAT, scratch, rcounts, rdispls, MPI_FLOAT, coll_g.data);
    if (rc != MPI_SUCCESS) {
        rc = coll_mpi_error(err, "MPI_Alltoallv", rc);
        goto out;
    }
    float *own = recv + displs[me];
    if (mine)
        memcpy(own, parts, mine * sizeof(float));
    for (int i = 1; i < n; i++)
        for (size_t k = 0; k < mine; k++)
            own[k] += parts[(size_t)i * mine + k];
    if (op == COLL_AVERAGE)
        divide(own, mine, COLL_FLOAT32, n);
    rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, MPI_FLOAT, coll_g.data);
    rc = rc == MPI_SUCCESS ? COLL_OK : coll_mpi_error(err, "MPI_Allgatherv", rc);
out:
    free(counts);
    return rc;
}

int coll_host_allreduce(const void *send, void *recv, size_t count, int64_t dtype, int64_t op, char *err)
{
    size_t es = coll_dtype_size((enum coll_dtype)dtype);
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
        rc = MPI_Allreduce(s == r ? MPI_IN_PLACE : s, r, (int)n, mpi_type(dtype), MPI_SUM, coll_g.data);
        if (rc != MPI_SUCCESS)
            return coll_mpi_error(err, "MPI_Allreduce", rc);
        if (op == COLL_AVERAGE)
            divide(r, n, dtype, coll_g.size);
    }
    return COLL_OK;
}

int coll_host_broadcast(void *buf, size_t count, int64_t dtype, int root, char *err)
{
    if (!coll_g.use_mpi)
        return COLL_OK;
    size_t es = coll_dtype_size((enum coll_dtype)dtype);
    for (size_t off = 0; off < count; off += MPI_PIECE) {
        size_t n = count - off < MPI_PIECE ? count - off : MPI_PIECE;
        int rc = MPI_Bcast((char *)buf + off * es, (int)n, mpi_type(dtype), root, coll_g.data);
        if (rc != MPI_SUCCESS)
            return coll_mpi_error(err, "MPI_Bcast", rc);
    }
    return COLL_OK;
}

int coll_host_allgather(const void *send, void *recv, size_t count, int64_t dtype, char *err)
{
    size_t es = coll_dtype_size((enum coll_dtype)dtype);
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
    int rc = MPI_Allgather(send == own ? MPI_IN_PLACE : send, (int)count, mpi_type(dtype), recv, (int)count,
                           mpi_type(dtype), coll_g.data);
    return rc == MPI_SUCCESS ? COLL_OK : coll_mpi_error(err, "MPI_Allgather", rc);
}

int coll_host_barrier(char *err)
{
    if (!coll_g.use_mpi)
        return COLL_OK;
    int rc = MPI_Barrier(coll_g.data);
    return rc == MPI_SUCCESS ? COLL_OK : coll_mpi_error(err, "MPI_Barrier", rc);
}
