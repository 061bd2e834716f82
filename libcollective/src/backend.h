/* The data plane of one kind of memory: what fusion.c calls to run a collective, whichever library moves
 * the bytes. Two implementations: coll_mpi_backend (host memory over MPI, mpi_backend.c) and the NCCL
 * plugin's `ops` (device memory, nccl_backend.c, loaded by device.c). fusion.c picks one per request from
 * its agreed descriptor (coll_desc.device) and runs every collective, fused or not, through it alike.
 *
 * Every function returns COLL_OK or a negative coll_status and, on failure, writes the library's message
 * into err (COLL_BACKEND_ERRLEN bytes). Collectives and copies may be queued (NCCL's stream): sync() waits
 * for them and reports what failed asynchronously; a backend that completes each call before returning
 * (MPI) syncs at no cost. All calls come from one thread at a time (the progress thread, or the caller's
 * thread in a process without MPI). */
#ifndef COLL_BACKEND_H
#define COLL_BACKEND_H

#include <stddef.h>

#include "collective.h"
#include "errors.h"

#define COLL_BACKEND_ERRLEN COLL_ERRLEN

struct coll_backend {
    const char *name; /* "MPI", "NCCL": for messages */
    /* Scratch in this backend's memory (the fusion buffer). */
    int (*alloc)(void **p, size_t bytes, char *err);
    void (*free)(void *p);
    int (*copy)(void *dst, const void *src, size_t bytes, char *err); /* within this memory, queued */
    /* send == recv reduces in place; COLL_AVERAGE divides each element's sum by the number of ranks. */
    int (*allreduce)(const void *send, void *recv, size_t count, enum coll_dtype type, enum coll_op op,
                     char *err);
    int (*broadcast)(void *buf, size_t count, enum coll_dtype type, int root, char *err);
    int (*allgather)(const void *send, void *recv, size_t count, enum coll_dtype type, char *err);
    int (*sync)(char *err); /* everything queued so far is done (or failed) */
};

#endif
