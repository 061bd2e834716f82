/* A stand-in for libcollective_nccl.so on machines without a GPU (test_device_pick.sh): it reports
 * $COLL_STUB_GPUS devices and accepts any open, so that coll_init's device choice and its refusal of two
 * ranks on one GPU run on real MPI ranks. No device collective may reach it: its data plane is empty, and
 * is_device_ptr says every buffer is host memory. */
#include <stdio.h>
#include <stdlib.h>

#include "nccl_plugin.h"

static int stub_count(int *count, char *err)
{
    const char *n = getenv("COLL_STUB_GPUS");
    *count = n ? atoi(n) : 0;
    (void)err;
    return COLL_OK;
}

static int stub_unique_id(unsigned char id[COLL_NCCL_ID_BYTES], char *err)
{
    (void)err;
    id[0] = 1;
    return COLL_OK;
}

static int stub_open(int device, const unsigned char id[COLL_NCCL_ID_BYTES], int rank, int size, char *err)
{
    if (size > 1 && id[0] != 1) {
        snprintf(err, COLL_BACKEND_ERRLEN, "nccl_stub: rank %d did not get rank 0's id", rank);
        return COLL_ERR_BACKEND;
    }
    (void)device;
    return COLL_OK;
}

static void stub_close(void) {}
static void stub_abort(void) {}
static int stub_is_device_ptr(const void *p)
{
    (void)p;
    return 0;
}

const struct coll_nccl_plugin *coll_nccl_plugin(void)
{
    static const struct coll_nccl_plugin plugin = {
        .abi = COLL_NCCL_PLUGIN_ABI,
        .device_count = stub_count,
        .unique_id = stub_unique_id,
        .open = stub_open,
        .close = stub_close,
        .is_device_ptr = stub_is_device_ptr,
        .ops = {.name = "stub"},
        .abort = stub_abort,
    };
    return &plugin;
}
