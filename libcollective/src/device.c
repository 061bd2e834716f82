/* The device side of coll_init(): finds and loads the NCCL plugin (nccl_plugin.h explains why it is a
 * plugin), picks this rank's GPU and builds the NCCL communicator from a unique id that rank 0 broadcasts
 * over MPI. The plugin stays loaded until exit: CUDA's runtime does not support being unloaded. */
#include "device.h"

#include "device_choice.h"
#include "errors.h"
#include "world.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *plugin_handle;

/* dlopen the plugin: $COLL_NCCL_LIBRARY, else next to this library or executable (lib/ or ../lib/), else
 * the loader's search path. */
static const struct coll_nccl_plugin *load(char *why, size_t len)
{
    char candidates[3][1024];
    int n = 0;
    const char *env = getenv("COLL_NCCL_LIBRARY");
    if (env && *env) {
        snprintf(candidates[n++], sizeof candidates[0], "%s", env);
    } else {
        Dl_info info;
        if (dladdr((void *)coll_device_open, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
            char self[1024];
            snprintf(self, sizeof self, "%s", info.dli_fname);
            const char *dir = dirname(self);
            snprintf(candidates[n++], sizeof candidates[0], "%s/%s", dir, COLL_NCCL_PLUGIN_FILE);
            snprintf(candidates[n++], sizeof candidates[0], "%s/../lib/%s", dir, COLL_NCCL_PLUGIN_FILE);
        }
        snprintf(candidates[n++], sizeof candidates[0], "%s", COLL_NCCL_PLUGIN_FILE);
    }
    why[0] = '\0';
    int full = 0;
    for (int i = 0; i < n && !plugin_handle; i++) {
        plugin_handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (!plugin_handle) {
            const char *e = dlerror();
            size_t used = strlen(why);
            if (!full && snprintf(why + used, len - used, "%s%s", used ? "; " : "", e ? e : candidates[i]) >=
                             (int)(len - used))
                full = 1; /* keep trying the other places, the message is just full */
        }
    }
    if (!plugin_handle)
        return NULL;
    const struct coll_nccl_plugin *(*get)(void);
    *(void **)&get = dlsym(plugin_handle, COLL_NCCL_PLUGIN_SYMBOL);
    const struct coll_nccl_plugin *p = get ? get() : NULL;
    if (!p || p->abi != COLL_NCCL_PLUGIN_ABI) {
        snprintf(why, len, "%s is not a libcollective NCCL plugin of ABI %d", COLL_NCCL_PLUGIN_FILE,
                 COLL_NCCL_PLUGIN_ABI);
        return NULL;
    }
    return p;
}

/* Every rank learns whether every rank succeeded, so that a failure on one rank fails coll_init()
 * everywhere instead of leaving the others in the next collective. */
static int all_ok(int ok)
{
    if (!coll_world.use_mpi)
        return ok;
    int all = 0;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, coll_world.ctrl) != MPI_SUCCESS)
        return 0;
    return all;
}

/* Refuses, on every rank of a node, picks that put two local ranks on one GPU (more ranks than the GPUs they
 * all see), naming them, before NCCL refuses the communicator in its own words. Collective over all ranks:
 * each calls it, whatever its own pick. A node of more ranks than PICKS_MAX is left to NCCL (the same
 * decision on all its ranks, so none waits). */
#define PICKS_MAX 1024
static int check_shared(int device, int count, char *err, size_t len)
{
    if (!coll_world.use_mpi || coll_world.local_size < 2 || coll_world.local_size > PICKS_MAX)
        return COLL_OK;
    struct coll_gpu_pick mine = {.device = device, .visible = coll_visible_digest(getenv("CUDA_VISIBLE_DEVICES"))};
    struct coll_gpu_pick all[PICKS_MAX];
    MPI_Comm node;
    int a, b, rc = MPI_Comm_split_type(coll_world.ctrl, MPI_COMM_TYPE_SHARED, coll_world.rank, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS)
        return coll_mpi_error(err, "MPI_Comm_split_type", rc);
    rc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, node);
    MPI_Comm_free(&node);
    if (rc != MPI_SUCCESS)
        return coll_mpi_error(err, "MPI_Allgather (GPU picks)", rc);
    if (device < 0 || !coll_device_shared(all, coll_world.local_size, &a, &b))
        return COLL_OK;
    snprintf(err, len, "libcollective: local ranks %d and %d would share GPU %d of the %d they see (the same "
             "CUDA_VISIBLE_DEVICES): ask Slurm for one GPU per task (--gpus-per-task=1), or run at most %d ranks "
             "per node", a, b, (int)all[a].device, count, count);
    return COLL_ERR_UNSUPPORTED;
}

/* Set once coll_init has loaded it; read by any thread after (the watchdog aborts through it). */
static const struct coll_nccl_plugin *plugin;

const struct coll_nccl_plugin *coll_device_plugin(void)
{
    return plugin;
}

int coll_device_open(void)
{
    char err[COLL_ERRLEN] = "";
    int rc = COLL_OK, count = 0, device = -1;
    unsigned char id[COLL_NCCL_ID_BYTES] = {0};
    char why[COLL_ERRLEN - 200];
    const struct coll_nccl_plugin *p = load(why, sizeof why);
    if (!p) {
        snprintf(err, sizeof err, "libcollective: use_device=1 but the NCCL backend cannot be loaded (%s); it is "
                 "built where CUDA and NCCL are installed, COLL_NCCL_LIBRARY may name it", why);
        rc = COLL_ERR_UNSUPPORTED;
    } else if ((rc = p->device_count(&count, err))) {
    } else if (count == 0) {
        snprintf(err, sizeof err, "libcollective: use_device=1 but no CUDA device is visible on rank %d",
                 coll_world.rank);
        rc = COLL_ERR_UNSUPPORTED;
    } else {
        device = coll_device_choice(count, coll_world.local_rank);
        /* A single rank opens no communicator (nccl_plugin.h), so it needs no id either. */
        if (coll_world.rank == 0 && coll_world.size > 1)
            rc = p->unique_id(id, err);
    }
    if (rc == COLL_OK)
        rc = check_shared(device, count, err, sizeof err);
    else
        (void)check_shared(-1, count, why, sizeof why);
    if (!all_ok(rc == COLL_OK)) {
        if (rc == COLL_OK) {
            snprintf(err, sizeof err, "libcollective: use_device=1 failed on another rank (see its message)");
            rc = COLL_ERR_UNSUPPORTED;
        }
        return coll_fail(rc, "%s", err);
    }
    if (coll_world.use_mpi && coll_world.size > 1) {
        int mrc = MPI_Bcast(id, COLL_NCCL_ID_BYTES, MPI_BYTE, 0, coll_world.ctrl);
        if (mrc != MPI_SUCCESS)
            return coll_fail(coll_mpi_error(err, "MPI_Bcast (NCCL unique id)", mrc), "%s", err);
    }
    rc = p->open(device, id, coll_world.rank, coll_world.size, err);
    if (rc)
        return coll_fail(rc, "%s", err);
    plugin = p;
    coll_world.device = device;
    return COLL_OK;
}

void coll_device_close(void)
{
    if (plugin)
        plugin->close();
    plugin = NULL;
    coll_world.device = -1;
}

int coll_is_device_ptr(const void *ptr)
{
    return plugin ? plugin->is_device_ptr(ptr) : 0;
}
