/* The NCCL backend as a plugin: libcollective_nccl.so, loaded with dlopen() by coll_init() only when a
 * device is asked for. This keeps libcollective.{a,so} free of CUDA: a host-only program links and runs
 * without libcudart/libnccl installed, and a GPU program gets NCCL without linking anything else.
 *
 * Every function returns COLL_OK or a negative coll_status and, on failure, writes the CUDA/NCCL message
 * into err (COLL_PLUGIN_ERRLEN bytes). Collectives and copies are queued on the plugin's one stream;
 * sync() waits for them and reports asynchronous NCCL errors. All calls after open() come from one thread
 * at a time (the progress thread, or the caller's thread in a process without MPI), except
 * is_device_ptr() and abort(), which any thread may call.
 *
 * open() with size 1 creates no NCCL communicator (and ignores id): one rank has nothing to exchange, so
 * allreduce and allgather are a device copy when out of place and nothing in place, broadcast is nothing,
 * and a process that never needed NCCL never initialises it.
 */
#ifndef COLL_NCCL_PLUGIN_H
#define COLL_NCCL_PLUGIN_H

#include <stddef.h>

#include "collective.h"

#define COLL_NCCL_PLUGIN_ABI 2
#define COLL_NCCL_PLUGIN_SYMBOL "coll_nccl_plugin"
#define COLL_NCCL_PLUGIN_FILE "libcollective_nccl.so"
#define COLL_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) */
#define COLL_PLUGIN_ERRLEN 512

struct coll_nccl_plugin {
    int abi; /* COLL_NCCL_PLUGIN_ABI */
    int (*device_count)(int *count, char *err);
    int (*unique_id)(unsigned char id[COLL_NCCL_ID_BYTES], char *err); /* on rank 0 */
    int (*open)(int device, const unsigned char id[COLL_NCCL_ID_BYTES], int rank, int size, char *err);
    void (*close)(void);
    int (*is_device_ptr)(const void *p); /* 1 device or managed memory, 0 host */
    int (*alloc)(void **p, size_t bytes, char *err);
    void (*free)(void *p);
    int (*copy)(void *dst, const void *src, size_t bytes, char *err); /* device to device, on the stream */
    int (*allreduce)(const void *send, void *recv, size_t count, enum coll_dtype type, enum coll_op op,
                     char *err);
    int (*broadcast)(void *buf, size_t count, enum coll_dtype type, int root, char *err);
    int (*allgather)(const void *send, void *recv, size_t count, enum coll_dtype type, char *err);
    int (*sync)(char *err); /* polls, sleeping, and aborts the communicator on an asynchronous error */
    void (*abort)(void);    /* ncclCommAbort: any thread, while another is blocked in NCCL (a stalled job) */
};

/* The one symbol the plugin exports. */
const struct coll_nccl_plugin *coll_nccl_plugin(void);

#endif
