/* Error text of the calling thread, and the names used in every message. */
#include "errors.h"

#include "collective.h"

#include <mpi.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Per thread, like errno: a failure in one thread never overwrites another's message. */
static _Thread_local char last_error[COLL_ERRLEN];

int coll_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void coll_set_error(const char *text)
{
    snprintf(last_error, sizeof last_error, "%s", text);
}

const char *coll_last_error(void)
{
    return last_error;
}

size_t coll_dtype_size(enum coll_dtype type)
{
    switch (type) {
    case COLL_FLOAT32: return 4;
    case COLL_FLOAT16: return 2;
    case COLL_BFLOAT16: return 2;
    case COLL_INT32: return 4;
    case COLL_INT64: return 8;
    case COLL_UINT8: return 1;
    }
    return 0;
}

const char *coll_dtype_name(int64_t dtype)
{
    static const char *const names[] = {"float32", "float16", "bfloat16", "int32", "int64", "uint8"};
    return dtype >= 0 && dtype < 6 ? names[dtype] : "unknown-type";
}

const char *coll_op_name(int64_t op)
{
    return op == COLL_SUM ? "sum" : op == COLL_AVERAGE ? "average" : "unknown-op";
}

const char *coll_kind_name(int64_t kind)
{
    static const char *const names[] = {"allreduce", "broadcast", "allgather", "barrier", "coll_finalize"};
    return kind >= 0 && kind < 5 ? names[kind] : "unknown-collective";
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

