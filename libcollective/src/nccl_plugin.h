/* The NCCL backend as a plugin: libcollective_nccl.so, loaded with dlopen() by coll_init() only when a
 * device is asked for. This keeps libcollective.{a,so} free of CUDA: a host-only program links and runs
 * without libcudart/libnccl installed, and a GPU program gets NCCL without linking anything else.
 *
 * The collectives are the plugin's `ops`, the data-plane table that the MPI backend fills too (backend.h):
 * queued on the plugin's one stream, and sync() waits for them and reports asynchronous NCCL errors. The
 * rest is the plugin's life cycle. Every function returns COLL_OK or a negative coll_status and, on
 * failure, writes the CUDA/NCCL message into err (COLL_BACKEND_ERRLEN bytes). All calls after open() come
 * from one thread at a time (the progress thread, or the caller's thread in a process without MPI),
 * except is_device_ptr() and abort(), which any thread may call.
 *
 * open() with size 1 creates no NCCL communicator (and ignores id): one rank has nothing to exchange, so
 * allreduce and allgather are a device copy when out of place and nothing in place, broadcast is nothing,
 * and a process that never needed NCCL never initialises it.
 */
#ifndef COLL_NCCL_PLUGIN_H
#define COLL_NCCL_PLUGIN_H

#include <stddef.h>

#include "backend.h"
#include "collective.h"

/* 3: the collectives moved into `ops` (struct coll_backend). */
#define COLL_NCCL_PLUGIN_ABI 3
#define COLL_NCCL_PLUGIN_SYMBOL "coll_nccl_plugin"
#define COLL_NCCL_PLUGIN_FILE "libcollective_nccl.so"
#define COLL_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) */

struct coll_nccl_plugin {
    int abi; /* COLL_NCCL_PLUGIN_ABI */
    int (*device_count)(int *count, char *err);
    int (*unique_id)(unsigned char id[COLL_NCCL_ID_BYTES], char *err); /* on rank 0 */
    int (*open)(int device, const unsigned char id[COLL_NCCL_ID_BYTES], int rank, int size, char *err);
    void (*close)(void);
    int (*is_device_ptr)(const void *p); /* 1 device or managed memory, 0 host */
    /* Device memory; copy() is device to device; sync() polls, sleeping, and aborts the communicator on
     * an asynchronous error. */
    struct coll_backend ops;
    void (*abort)(void); /* ncclCommAbort: any thread, while another is blocked in NCCL (a stalled job) */
};

/* The one symbol the plugin exports. */
const struct coll_nccl_plugin *coll_nccl_plugin(void);

#endif
