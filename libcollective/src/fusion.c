/* Tensor fusion (Horovod's): consecutive granted allreduces of the same type, op and memory kind are packed
 * into one buffer of at most COLL_FUSION_THRESHOLD bytes, reduced with one collective and unpacked.
 * Consecutive allreduces in one node-shared region need no packing: shm.c reduces them where they lie,
 * with one wait for the other ranks at the end.
 * Every rank groups the same granted sequence the same way (the grouping depends only on the agreed
 * descriptors and, on one host, where some rank's announcement ended: hostctl.c), and the backends
 * compute each element independently of its neighbours (mpi_backend.c), so the results are bit-identical
 * to reducing the tensors one by one. Runs on the progress thread. */
#include "fusion.h"

#include "backend.h"
#include "clock.h"
#include "device.h"
#include "hier.h"
#include "mpi_backend.h"
#include "timeline.h"
#include "world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One fusion buffer per kind of memory (0 host, 1 device), grown on demand up to the threshold and kept
 * between steps as Horovod keeps its own. */
static struct fusion_buf {
    void *p;
    size_t cap;
} fusion_buf[2];

/* The backend that runs collectives on this request's memory (backend.h). */
static const struct coll_backend *backend_of(const struct coll_request *r)
{
    return r->d.device ? &coll_device_plugin()->ops : coll_world.hier ? &coll_hier_backend : &coll_mpi_backend;
}

void coll_fusion_release(void)
{
    if (fusion_buf[0].p)
        coll_mpi_backend.free(fusion_buf[0].p);
    if (fusion_buf[1].p && coll_device_plugin())
        coll_device_plugin()->ops.free(fusion_buf[1].p);
    memset(fusion_buf, 0, sizeof fusion_buf);
}

static size_t bytes_of(const struct coll_request *r)
{
    return (size_t)r->d.count * coll_dtype_size((enum coll_dtype)r->d.dtype);
}

/* A tensor of at least COLL_FUSION_DIRECT bytes already runs at full bandwidth alone: copying it into and
 * out of the fusion buffer would cost more than the latency fusion saves (measured: the model's 12
 * gradient tensors took 1.84x one MPI_Allreduce when all were packed, the 4.7 MB dense kernel included).
 * It depends only on the agreed descriptor, so every rank groups alike. */
static int fusable(const struct coll_request *r)
{
    return r->d.kind == COLL_KIND_ALLREDUCE && r->status == COLL_OK && !r->d.shm_region &&
           (coll_world.env.fusion_direct == 0 || bytes_of(r) < coll_world.env.fusion_direct);
}

/* How many requests from w[0] on go through one collective. */
static size_t group_size(struct coll_request **w, size_t n)
{
    const struct coll_request *a = w[0];
    if (a->d.shm_region && a->status == COLL_OK) {
        size_t k = 1;
        while (k < n && w[k]->d.shm_region == a->d.shm_region && w[k]->status == COLL_OK)
            k++;
        return k;
    }
    if (!fusable(a))
        return 1;
    size_t bytes = bytes_of(a), k = 1;
    for (; k < n && !w[k - 1]->cut_after; k++) {
        const struct coll_request *b = w[k];
        if (!fusable(b) || b->d.dtype != a->d.dtype || b->d.op != a->d.op || b->d.device != a->d.device ||
            bytes + bytes_of(b) > coll_world.env.fusion_threshold)
            break;
        bytes += bytes_of(b);
    }
    return k;
}

static int run_one(struct coll_request *r, char *err)
{
    const struct coll_desc *d = &r->d;
    const struct coll_backend *b = backend_of(r);
    const size_t count = (size_t)d->count;
    const enum coll_dtype type = (enum coll_dtype)d->dtype;
    int rc;
    switch (d->kind) {
    case COLL_KIND_ALLREDUCE:
        rc = count ? b->allreduce(r->send, r->recv, count, type, (enum coll_op)d->op, err) : COLL_OK;
        break;
    case COLL_KIND_BROADCAST: rc = count ? b->broadcast(r->recv, count, type, (int)d->root, err) : COLL_OK; break;
    case COLL_KIND_ALLGATHER: rc = count ? b->allgather(r->send, r->recv, count, type, err) : COLL_OK; break;
    case COLL_KIND_BARRIER:
    case COLL_KIND_FINALIZE: return coll_mpi_barrier(err);
    default:
        snprintf(err, COLL_ERRLEN, "libcollective: unknown collective kind %lld", (long long)d->kind);
        return COLL_ERR_ARG;
    }
    return rc ? rc : b->sync(err);
}

/* With the timeline on: when the backend last finished reducing (before copies out and device syncs).
 * Per thread: without MPI, collectives run in the callers' threads. */
static _Thread_local double reduced_at;

static void mark_reduced(void)
{
    if (coll_world.timeline)
        reduced_at = coll_now();
}

/* k fusable allreduces of `total` bytes: packed into the fusion buffer of their memory, reduced with one
 * collective, unpacked. */
static int run_fused(struct coll_request **w, size_t k, size_t total, char *err)
{
    const struct coll_backend *b = backend_of(w[0]);
    struct fusion_buf *f = &fusion_buf[w[0]->d.device != 0];
    int rc;
    if (total > f->cap) {
        if (f->p)
            b->free(f->p);
        f->p = NULL;
        f->cap = 0;
        if ((rc = b->alloc(&f->p, total, err)))
            return rc;
        f->cap = total;
    }
    char *buf = f->p;
    size_t off = 0;
    for (size_t i = 0; i < k; off += bytes_of(w[i]), i++)
        if ((rc = b->copy(buf + off, w[i]->send, bytes_of(w[i]), err)))
            return rc;
    const size_t es = coll_dtype_size((enum coll_dtype)w[0]->d.dtype);
    if ((rc = b->allreduce(buf, buf, total / es, (enum coll_dtype)w[0]->d.dtype, (enum coll_op)w[0]->d.op, err)))
        return rc;
    mark_reduced();
    off = 0;
    for (size_t i = 0; i < k; off += bytes_of(w[i]), i++)
        if ((rc = b->copy(w[i]->recv, buf + off, bytes_of(w[i]), err)))
            return rc;
    return b->sync(err);
}

/* The timeline's record of each request of a group that began at `fused` (timeline.h); made before the
 * request completes, since its waiter may free it from then on. */
static void record(struct coll_request **w, size_t k, double fused)
{
    const double done = coll_now();
    for (size_t i = 0; i < k; i++) {
        const struct coll_request *r = w[i];
        struct coll_tl_rec rec = {.seq = r->seq, .d = r->d, .group = (int64_t)k};
        rec.t[COLL_TL_QUEUED] = r->queued_at;
        rec.t[COLL_TL_READY] = r->granted_at ? r->granted_at : r->queued_at; /* no MPI: ready at once */
        rec.t[COLL_TL_FUSED] = fused;
        rec.t[COLL_TL_REDUCED] = reduced_at > fused ? reduced_at : done;
        rec.t[COLL_TL_DONE] = done;
        coll_timeline_local(&rec);
    }
}

/* Reduced in place by a backend, every rank holds all of an apply request's values: each hands its whole
 * buffer to the function, for itself alone. */
static void hand_over(struct coll_request **w, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (w[i]->apply)
            w[i]->apply(w[i]->apply_ctx, w[i]->recv, (size_t)w[i]->d.count, w[i]->recv, coll_world.rank, 1);
}

void coll_fusion_run(const struct coll_fusion_hooks *h, struct coll_request **w, size_t n)
{
    char err[COLL_ERRLEN];
    while (n) {
        size_t k = group_size(w, n);
        int rc;
        err[0] = '\0';
        const double fused = coll_now();
        h->started(w[0], fused);
        reduced_at = 0;
        if (w[0]->status != COLL_OK) {
            rc = w[0]->status; /* refused by the coordinator on every rank: not run anywhere */
            snprintf(err, sizeof err, "%s", w[0]->error);
        } else if (w[0]->d.shm_region) {
            rc = coll_shm_allreduce(w, k, h->bell, err);
        } else if (k == 1) {
            rc = run_one(w[0], err);
            mark_reduced();
        } else {
            size_t total = 0;
            for (size_t i = 0; i < k; i++)
                total += bytes_of(w[i]);
            rc = run_fused(w, k, total, err);
        }
        if (rc == COLL_OK && !w[0]->d.shm_region)
            hand_over(w, k);
        if (coll_world.timeline)
            record(w, k, fused);
        for (size_t i = 0; i < k; i++)
            h->finished(w[i], rc, err);
        w += k;
        n -= k;
    }
}
