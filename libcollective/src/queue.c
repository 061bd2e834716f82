/* The public collective calls: each one becomes a request queued for the progress thread; blocking calls
 * are a queued request plus a wait. Handles live on coll_ctl.live until a wait frees them. */
#include "api.h"

#include "clock.h"
#include "controller.h"
#include "device.h"
#include "errors.h"
#include "shm.h"
#include "world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int refuse_type(int64_t kind, int64_t dtype, int64_t device)
{
    if (dtype < COLL_FLOAT32 || dtype > COLL_UINT8)
        return coll_fail(COLL_ERR_ARG, "libcollective: %s: unknown data type %lld", coll_kind_name(kind),
                         (long long)dtype);
    if (!device && (dtype == COLL_FLOAT16 || dtype == COLL_BFLOAT16))
        return coll_fail(COLL_ERR_UNSUPPORTED,
                         "libcollective: %s of %s needs device memory and the NCCL backend; the MPI backend "
                         "handles float32, int32, int64 and uint8",
                         coll_kind_name(kind), coll_dtype_name(dtype));
    return COLL_OK;
}

/* Which memory the buffers are in: 1 device, 0 host; both buffers must agree. */
static int memory_kind(int64_t kind, const void *send, const void *recv, int64_t *device)
{
    *device = 0;
    if (!coll_device_plugin())
        return COLL_OK; /* initialised for host memory only: every pointer is host memory */
    int ds = send ? coll_is_device_ptr(send) : -1, dr = recv ? coll_is_device_ptr(recv) : -1;
    if (ds >= 0 && dr >= 0 && ds != dr)
        return coll_fail(COLL_ERR_ARG, "libcollective: %s: sendbuf is %s memory but recvbuf is %s memory",
                         coll_kind_name(kind), ds ? "device" : "host", dr ? "device" : "host");
    *device = ds > 0 || dr > 0;
    return COLL_OK;
}

/* A request's function for coll_allreduce_apply_async (NULL fn: none). */
struct apply {
    coll_apply_fn fn;
    void *ctx;
};

static int enqueue(int64_t kind, const void *send, void *recv, size_t count, int64_t dtype, int64_t op,
                   int64_t root, struct apply apply, coll_handle *handle)
{
    const char *name = coll_kind_name(kind);
    int rc;
    if (!coll_world.initialised)
        return coll_fail(COLL_ERR_STATE, "libcollective: %s called before coll_init()", name);
    if (kind < COLL_KIND_BARRIER && count > 0 && (!recv || !send))
        return coll_fail(COLL_ERR_ARG, "libcollective: %s of %zu elements with a NULL buffer", name, count);
    if (kind == COLL_KIND_ALLREDUCE && op != COLL_SUM && op != COLL_AVERAGE)
        return coll_fail(COLL_ERR_ARG, "libcollective: allreduce: unknown op %lld", (long long)op);
    if (kind == COLL_KIND_BROADCAST && (root < 0 || root >= coll_world.size))
        return coll_fail(COLL_ERR_ARG, "libcollective: broadcast root %lld is not a rank (size %d)",
                         (long long)root, coll_world.size);
    struct coll_desc d = {.kind = kind, .count = (int64_t)count, .dtype = dtype, .op = op, .root = root,
                          .apply = apply.fn != NULL};
    if (kind < COLL_KIND_BARRIER &&
        ((rc = memory_kind(kind, count ? send : NULL, count ? recv : NULL, &d.device)) ||
         (rc = refuse_type(kind, dtype, d.device))))
        return rc;
    if (d.apply && d.device) /* its function runs on the host, over the reduced values */
        return coll_fail(COLL_ERR_UNSUPPORTED,
                         "libcollective: allreduce_apply of device memory; it reduces host memory only");
    struct coll_shm_region *shm = NULL;
    if (kind == COLL_KIND_ALLREDUCE && send == recv && dtype == COLL_FLOAT32 && !d.device && count &&
        (shm = coll_shm_find(recv, count * sizeof(float), &d.shm_region, &d.shm_offset)))
        d.shm_region++; /* 0 means none */

    struct coll_request *r = calloc(1, sizeof *r);
    if (!r)
        return coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for a %s request", name);
    r->d = d;
    r->shm = shm;
    r->apply = apply.fn;
    r->apply_ctx = apply.ctx;
    r->send = send;
    r->recv = recv;
    r->queued_at = coll_now();
    /* One process without MPI has nobody to agree with and nothing to exchange: the request runs here, at
     * once, instead of waking the progress thread (its hand-off alone cost more than NCCL's own latency).
     * Nothing is ever queued in that case, so this cannot overtake an earlier request. */
    const int inline_run = !coll_world.use_mpi;
    pthread_mutex_lock(&coll_ctl.lock);
    r->seq = coll_ctl.next_seq++;
    if (!inline_run) {
        if (coll_ctl.pending_tail)
            coll_ctl.pending_tail->pending_next = r;
        else
            coll_ctl.pending_head = r;
        coll_ctl.pending_tail = r;
    }
    r->live_prev = coll_ctl.live_tail;
    if (coll_ctl.live_tail)
        coll_ctl.live_tail->live_next = r;
    else
        coll_ctl.live_head = r;
    coll_ctl.live_tail = r;
    if (!inline_run && !coll_ctl.cycle_pending) /* else it takes this one with them at its deadline */
        coll_progress_wake_locked();
    pthread_mutex_unlock(&coll_ctl.lock);
    if (inline_run)
        coll_progress_run_inline(r);
    *handle = r;
    return COLL_OK;
}

/* With the lock held: remove r from the live list and free it; returns its status (and sets the error). */
static int release_locked(struct coll_request *r)
{
    if (r->live_prev)
        r->live_prev->live_next = r->live_next;
    else
        coll_ctl.live_head = r->live_next;
    if (r->live_next)
        r->live_next->live_prev = r->live_prev;
    else
        coll_ctl.live_tail = r->live_prev;
    int status = r->status;
    if (status != COLL_OK)
        coll_set_error(r->error);
    free(r);
    return status;
}

int coll_wait(coll_handle r)
{
    if (!r)
        return coll_fail(COLL_ERR_ARG, "libcollective: coll_wait on a NULL handle");
    pthread_mutex_lock(&coll_ctl.lock);
    if (!r->done) {
        coll_ctl.flush = 1; /* someone is blocked on it: announce without waiting for the cycle */
        coll_progress_wake_locked();
        while (!r->done)
            pthread_cond_wait(&coll_ctl.done_cv, &coll_ctl.lock);
    }
    int status = release_locked(r);
    pthread_mutex_unlock(&coll_ctl.lock);
    return status;
}

int coll_wait_all(void)
{
    if (!coll_world.initialised)
        return coll_fail(COLL_ERR_STATE, "libcollective: coll_wait_all called before coll_init()");
    int first = COLL_OK;
    char error[COLL_ERRLEN] = "";
    pthread_mutex_lock(&coll_ctl.lock);
    /* Requests complete in sequence order, so the newest one being done means all are. */
    if (coll_ctl.live_tail && !coll_ctl.live_tail->done) {
        coll_ctl.flush = 1;
        coll_progress_wake_locked();
        while (!coll_ctl.live_tail->done)
            pthread_cond_wait(&coll_ctl.done_cv, &coll_ctl.lock);
    }
    while (coll_ctl.live_head) {
        int status = release_locked(coll_ctl.live_head);
        if (status != COLL_OK && first == COLL_OK) {
            first = status;
            snprintf(error, sizeof error, "%s", coll_last_error());
        }
    }
    pthread_mutex_unlock(&coll_ctl.lock);
    if (first != COLL_OK)
        coll_set_error(error);
    return first;
}

int coll_test(coll_handle r, int *done)
{
    if (!r || !done)
        return coll_fail(COLL_ERR_ARG, "libcollective: coll_test with a NULL %s", r ? "done pointer" : "handle");
    pthread_mutex_lock(&coll_ctl.lock);
    *done = r->done;
    pthread_mutex_unlock(&coll_ctl.lock);
    return COLL_OK;
}

/* A blocking call is a queued request and a wait. */
static int run(int64_t kind, const void *send, void *recv, size_t count, int64_t dtype, int64_t op, int64_t root)
{
    coll_handle h;
    int rc = enqueue(kind, send, recv, count, dtype, op, root, (struct apply){0}, &h);
    return rc ? rc : coll_wait(h);
}

int coll_allreduce_async(const void *sendbuf, void *recvbuf, size_t count, enum coll_dtype type,
                         enum coll_op op, coll_handle *handle)
{
    if (!handle)
        return coll_fail(COLL_ERR_ARG, "libcollective: allreduce_async with a NULL handle pointer");
    return enqueue(COLL_KIND_ALLREDUCE, sendbuf, recvbuf, count, type, op, 0, (struct apply){0}, handle);
}

int coll_allreduce_apply_async(float *buf, size_t count, enum coll_op op, coll_apply_fn fn, void *ctx,
                               coll_handle *handle)
{
    if (!handle || !fn)
        return coll_fail(COLL_ERR_ARG, "libcollective: allreduce_apply_async with a NULL %s",
                         handle ? "function" : "handle pointer");
    return enqueue(COLL_KIND_ALLREDUCE, buf, buf, count, COLL_FLOAT32, op, 0, (struct apply){fn, ctx}, handle);
}

int coll_broadcast_async(void *buf, size_t count, enum coll_dtype type, int root, coll_handle *handle)
{
    if (!handle)
        return coll_fail(COLL_ERR_ARG, "libcollective: broadcast_async with a NULL handle pointer");
    return enqueue(COLL_KIND_BROADCAST, buf, buf, count, type, 0, root, (struct apply){0}, handle);
}

int coll_allreduce(const void *sendbuf, void *recvbuf, size_t count, enum coll_dtype type, enum coll_op op)
{
    return run(COLL_KIND_ALLREDUCE, sendbuf, recvbuf, count, type, op, 0);
}

int coll_broadcast(void *buf, size_t count, enum coll_dtype type, int root)
{
    return run(COLL_KIND_BROADCAST, buf, buf, count, type, 0, root);
}

int coll_allgather(const void *sendbuf, void *recvbuf, size_t count, enum coll_dtype type)
{
    return run(COLL_KIND_ALLGATHER, sendbuf, recvbuf, count, type, 0, 0);
}

int coll_barrier(void)
{
    return run(COLL_KIND_BARRIER, NULL, NULL, 0, COLL_UINT8, 0, 0);
}

int coll_finalize_barrier(void)
{
    return run(COLL_KIND_FINALIZE, NULL, NULL, 0, COLL_UINT8, 0, 0);
}
