/* Tensor fusion (Horovod's): consecutive granted allreduces of the same type, op and memory kind are packed
 * into one buffer of at most COLL_FUSION_THRESHOLD bytes, reduced with one collective and unpacked.
 * Every rank groups the same granted sequence the same way (the grouping depends only on the agreed
 * descriptors), and the backends compute each element independently of its neighbours (mpi_backend.c),
 * so the results are bit-identical to reducing the tensors one by one. Runs on the progress thread. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grown on demand up to the threshold; kept between steps as Horovod keeps its fusion buffer. */
static char *host_buf;
static size_t host_cap;
static void *dev_buf;
static size_t dev_cap;

void coll_fusion_release(void)
{
    free(host_buf);
    host_buf = NULL;
    host_cap = 0;
    if (dev_buf && coll_g.nccl)
        coll_g.nccl->free(dev_buf);
    dev_buf = NULL;
    dev_cap = 0;
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
    return r->d.kind == COLL_KIND_ALLREDUCE && r->status == COLL_OK &&
           (coll_g.env.fusion_direct == 0 || bytes_of(r) < coll_g.env.fusion_direct);
}

/* How many requests from w[0] on go through one collective. */
static size_t group_size(struct coll_request **w, size_t n)
{
    const struct coll_request *a = w[0];
    if (!fusable(a))
        return 1;
    size_t bytes = bytes_of(a), k = 1;
    for (; k < n; k++) {
        const struct coll_request *b = w[k];
        if (!fusable(b) || b->d.dtype != a->d.dtype || b->d.op != a->d.op || b->d.device != a->d.device ||
            bytes + bytes_of(b) > coll_g.env.fusion_threshold)
            break;
        bytes += bytes_of(b);
    }
    return k;
}

static int device_done(int rc, char *err)
{
    return rc ? rc : coll_g.nccl->sync(err);
}

static int run_one(struct coll_request *r, char *err)
{
    const struct coll_desc *d = &r->d;
    size_t count = (size_t)d->count;
    const struct coll_nccl_plugin *dev = d->device ? coll_g.nccl : NULL;
    switch (d->kind) {
    case COLL_KIND_ALLREDUCE:
        if (!count)
            return COLL_OK;
        return dev ? device_done(dev->allreduce(r->send, r->recv, count, (enum coll_dtype)d->dtype,
                                                (enum coll_op)d->op, err), err)
                   : coll_host_allreduce(r->send, r->recv, count, d->dtype, d->op, err);
    case COLL_KIND_BROADCAST:
        if (!count)
            return COLL_OK;
        return dev ? device_done(dev->broadcast(r->recv, count, (enum coll_dtype)d->dtype, (int)d->root, err), err)
                   : coll_host_broadcast(r->recv, count, d->dtype, (int)d->root, err);
    case COLL_KIND_ALLGATHER:
        if (!count)
            return COLL_OK;
        return dev ? device_done(dev->allgather(r->send, r->recv, count, (enum coll_dtype)d->dtype, err), err)
                   : coll_host_allgather(r->send, r->recv, count, d->dtype, err);
    case COLL_KIND_BARRIER:
    case COLL_KIND_FINALIZE:
        return coll_host_barrier(err);
    }
    snprintf(err, COLL_ERRLEN, "libcollective: unknown collective kind %lld", (long long)d->kind);
    return COLL_ERR_ARG;
}

static int run_fused_host(struct coll_request **w, size_t k, size_t total, char *err)
{
    if (total > host_cap) {
        char *p = realloc(host_buf, total);
        if (!p) {
            snprintf(err, COLL_ERRLEN, "libcollective: no memory for a %zu-byte fusion buffer", total);
            return COLL_ERR_NOMEM;
        }
        host_buf = p;
        host_cap = total;
    }
    size_t off = 0;
    for (size_t i = 0; i < k; i++) {
        memcpy(host_buf + off, w[i]->send, bytes_of(w[i]));
        off += bytes_of(w[i]);
    }
    size_t es = coll_dtype_size((enum coll_dtype)w[0]->d.dtype);
    int rc = coll_host_allreduce(host_buf, host_buf, total / es, w[0]->d.dtype, w[0]->d.op, err);
    if (rc)
        return rc;
    off = 0;
    for (size_t i = 0; i < k; i++) {
        memcpy(w[i]->recv, host_buf + off, bytes_of(w[i]));
        off += bytes_of(w[i]);
    }
    return COLL_OK;
}

static int run_fused_device(struct coll_request **w, size_t k, size_t total, char *err)
{
    const struct coll_nccl_plugin *dev = coll_g.nccl;
    int rc;
    if (total > dev_cap) {
        if (dev_buf)
            dev->free(dev_buf);
        dev_buf = NULL;
        dev_cap = 0;
        if ((rc = dev->alloc(&dev_buf, total, err)))
            return rc;
        dev_cap = total;
    }
    size_t off = 0;
    for (size_t i = 0; i < k; i++, off += bytes_of(w[i - 1]))
        if ((rc = dev->copy((char *)dev_buf + off, w[i]->send, bytes_of(w[i]), err)))
            return rc;
    size_t es = coll_dtype_size((enum coll_dtype)w[0]->d.dtype);
    if ((rc = dev->allreduce(dev_buf, dev_buf, total / es, (enum coll_dtype)w[0]->d.dtype,
                             (enum coll_op)w[0]->d.op, err)))
        return rc;
    off = 0;
    for (size_t i = 0; i < k; i++, off += bytes_of(w[i - 1]))
        if ((rc = dev->copy(w[i]->recv, (char *)dev_buf + off, bytes_of(w[i]), err)))
            return rc;
    return dev->sync(err);
}

void coll_fusion_run(struct coll_request **w, size_t n)
{
    char err[COLL_ERRLEN];
    while (n) {
        size_t k = group_size(w, n);
        int rc;
        err[0] = '\0';
        pthread_mutex_lock(&coll_g.lock); /* from here the watchdog blames the backend, not the grant */
        w[0]->running_since = coll_now();
        pthread_mutex_unlock(&coll_g.lock);
        if (w[0]->status != COLL_OK) {
            rc = w[0]->status; /* refused by the coordinator on every rank: not run anywhere */
            snprintf(err, sizeof err, "%s", w[0]->error);
        } else if (k == 1) {
            rc = run_one(w[0], err);
        } else {
            size_t total = 0;
            for (size_t i = 0; i < k; i++)
                total += bytes_of(w[i]);
            rc = w[0]->d.device ? run_fused_device(w, k, total, err) : run_fused_host(w, k, total, err);
        }
        for (size_t i = 0; i < k; i++)
            coll_complete(w[i], rc, err);
        w += k;
        n -= k;
    }
}
