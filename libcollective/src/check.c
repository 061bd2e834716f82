/* Checked mode: what a collective is, in words, and what two ranks disagree on. */
#include "desc.h"
#include "errors.h"

#include <stdio.h>

void coll_desc_format(const struct coll_desc *d, char *buf, size_t len)
{
    const char *mem = d->device ? "device" : "host";
    switch (d->kind) {
    case COLL_KIND_ALLREDUCE:
        if (d->shm_region)
            snprintf(buf, len, "allreduce%s %s of %lld x %s in node-shared memory (coll_host_alloc #%lld, byte %lld)",
                     d->apply ? "-apply" : "", coll_op_name(d->op), (long long)d->count, coll_dtype_name(d->dtype),
                     (long long)d->shm_region - 1, (long long)d->shm_offset);
        else
            snprintf(buf, len, "allreduce%s %s of %lld x %s in %s memory", d->apply ? "-apply" : "",
                     coll_op_name(d->op), (long long)d->count, coll_dtype_name(d->dtype), mem);
        break;
    case COLL_KIND_BROADCAST:
        snprintf(buf, len, "broadcast of %lld x %s from root %lld in %s memory", (long long)d->count,
                 coll_dtype_name(d->dtype), (long long)d->root, mem);
        break;
    case COLL_KIND_ALLGATHER:
        snprintf(buf, len, "allgather of %lld x %s per rank in %s memory", (long long)d->count,
                 coll_dtype_name(d->dtype), mem);
        break;
    default:
        snprintf(buf, len, "%s", coll_kind_name(d->kind));
    }
}

int coll_check_differs(const struct coll_desc *a, int rank_a, const struct coll_desc *b, int rank_b,
                       int64_t seq, char *msg, size_t len)
{
    /* Fields a collective does not use are zero on every rank (queue.c), so all of them can be compared. */
    if (a->kind == b->kind && a->count == b->count && a->dtype == b->dtype && a->op == b->op &&
        a->root == b->root && a->device == b->device && a->shm_region == b->shm_region &&
        a->shm_offset == b->shm_offset && a->apply == b->apply)
        return 0;
    char da[200], db[200];
    coll_desc_format(a, da, sizeof da);
    coll_desc_format(b, db, sizeof db);
    snprintf(msg, len, "libcollective: collective #%lld differs across ranks: rank %d called %s, rank %d called %s",
             (long long)seq, rank_a, da, rank_b, db);
    return 1;
}
