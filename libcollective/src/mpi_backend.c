/* coll_mpi_backend (backend.h): host-memory collectives over MPI (coll_world.data), called from the progress
 * thread only (or the caller's thread in a process without MPI, where each is a local copy or nothing).
 *
 * Every collective is nonblocking, completed by coll_mpi_wait() without spinning. A float32 allreduce is our
 * own reduce-scatter + allgather over point-to-point messages (split_f32; split_f16 with COLL_COMPRESS=fp16):
 * each rank sums its 1/n of the elements, adding the ranks' values of an element in rank order 0, 1, ..., n-1,
 * divides them there for COLL_AVERAGE, and sends the result to the others. An element's result thus depends only on the ranks'
 * values of that element, never on the message size, so a fused buffer and the same tensor alone agree to
 * the bit (with two ranks a+b is exact in any order, and equal to what MPI_Allreduce gives). Why not
 * MPI_Iallreduce: with more than two ranks its order of addition depends on the message size (ring chunks,
 * segments); and Open MPI 4.1's libnbc picks its binomial algorithm for fewer than 4 ranks or an in-place
 * buffer, where rank 0 receives and reduces the whole buffer into a temporary it mallocs (and page-faults
 * in) on every call, then sends it all back. Split, each rank reduces and moves 1/n, into a kept scratch
 * (less progress-thread CPU per training step: docs/benchmarks.md, "libcollective: the figures behind its
 * design"). Other types (exact in any order) go through MPI_Iallreduce, then divide. */
#include "mpi_backend.h"

#include "clock.h"
#include "errors.h"
#include "half.h"
#include "reduce.h"
#include "world.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest piece handed to one MPI call: MPI counts are int. */
#define MPI_PIECE ((size_t)1 << 30)

/* Across hosts the float allreduce's messages are cut into pieces of at most WIRE_PIECE bytes, at most
 * WIRE_WINDOW of them in flight per peer and direction. Open MPI sends a message over TCP at once only up to
 * its eager limit (64 KiB with its header); a larger one goes by rendezvous, and the receiver's go-ahead then
 * waits in the socket the two ranks share, behind the receiver's own outgoing half of the exchange, so that
 * the two directions of the link fill one at a time instead of both at once (docs/benchmarks.md,
 * "libcollective across hosts at 1 Gbit/s"). The window bounds what a transport that does use rendezvous for
 * them may still owe the peer once this rank's requests are complete: the progress thread may then sleep
 * without calling MPI (idle_locked), and hundreds of owed acknowledgements in Open MPI's shared-memory
 * transport were seen to hang the peer. Ranks of one host exchange whole messages (COLL_WIRE_PIECES=auto;
 * 1 and 0 force either way). MPI's ordering keeps the pieces of a pair matched. */
#define WIRE_PIECE ((size_t)63 << 10)
#define WIRE_WINDOW 16

static void *scratch;
static size_t scratch_size;

static MPI_Datatype mpi_type(enum coll_dtype dtype)
{
    switch (dtype) {
    case COLL_FLOAT32: return MPI_FLOAT;
    case COLL_INT32: return MPI_INT32_T;
    case COLL_INT64: return MPI_INT64_T;
    case COLL_UINT8: return MPI_UINT8_T;
    case COLL_FLOAT16:
    case COLL_BFLOAT16: break; /* refused before they get here (queue.c) */
    }
    return MPI_DATATYPE_NULL;
}

/* Completes nonblocking requests (finish: the one that `call` started, returning rc) without spinning:
 * Open MPI's blocking collectives poll the shared-memory queues flat out while a peer is late, on the core that
 * this rank's compute thread needs (docs/benchmarks.md, "Figures behind code comments"). Testing and
 * napping (coll_nap) costs a few wake-ups per collective instead. */
int coll_mpi_wait(int n, MPI_Request *reqs, const char *call, char *err)
{
    double nap = 0;
    for (;;) {
        /* Twice before each nap: Open MPI's MPI_Testall runs the progress engine only after it found a
         * request unfinished, and does not look again (MPI_Test does), so a single call would nap after
         * every step of a multi-round schedule, several times the latency of a small allreduce
         * (docs/benchmarks.md, "Figures behind code comments"). */
        for (int look = 0; look < 2; look++) {
            int done = 0, rc;
            if ((rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE)) != MPI_SUCCESS)
                return coll_mpi_error(err, call, rc);
            if (done)
                return COLL_OK;
        }
        coll_nap(&nap);
    }
}

static int finish(int rc, MPI_Request *req, const char *call, char *err)
{
    return rc != MPI_SUCCESS ? coll_mpi_error(err, call, rc) : coll_mpi_wait(1, req, call, err);
}

static int scratch_reserve(size_t bytes, char *err)
{
    if (bytes <= scratch_size)
        return COLL_OK;
    void *p = realloc(scratch, bytes);
    if (!p) {
        snprintf(err, COLL_ERRLEN, "libcollective: no memory for %zu bytes of reduction scratch", bytes);
        return COLL_ERR_NOMEM;
    }
    scratch = p;
    scratch_size = bytes;
    return COLL_OK;
}

void coll_mpi_release(void)
{
    free(scratch);
    scratch = NULL;
    scratch_size = 0;
}

static void divide(void *buf, size_t count, enum coll_dtype dtype, int n)
{
    switch (dtype) {
    case COLL_FLOAT32: for (size_t i = 0; i < count; i++) ((float *)buf)[i] /= (float)n; break;
    case COLL_INT32: for (size_t i = 0; i < count; i++) ((int32_t *)buf)[i] /= n; break;
    case COLL_INT64: for (size_t i = 0; i < count; i++) ((int64_t *)buf)[i] /= n; break;
    case COLL_UINT8: for (size_t i = 0; i < count; i++) ((uint8_t *)buf)[i] /= (uint8_t)n; break;
    case COLL_FLOAT16:
    case COLL_BFLOAT16: break; /* device memory only: never here */
    }
}

/* The split of count elements over n ranks: rank j owns [displs[j], displs[j] + counts[j]). A phase's
 * messages are flows, one per other rank and direction, each posted in slots of reqs (owner: the slot's
 * flow). */
struct flow {
    char *buf;
    int left; /* elements not posted yet */
    int peer, is_send;
};

struct split {
    int n, me, *counts, *displs;
    int pieced, nflows, *owner, *done;
    struct flow *flows;
    MPI_Request *reqs;
    const float **part;
};

static int split_new(struct split *sp, MPI_Comm comm, size_t count, int pieced, char *err)
{
    MPI_Comm_rank(comm, &sp->me);
    MPI_Comm_size(comm, &sp->n);
    const int n = sp->n;
    const size_t slots = 2 * (size_t)n * (pieced ? WIRE_WINDOW : 1);
    sp->pieced = pieced;
    sp->counts = malloc(2 * (size_t)n * sizeof(int));
    sp->flows = malloc(2 * (size_t)n * sizeof *sp->flows);
    sp->reqs = malloc(slots * sizeof *sp->reqs);
    sp->owner = malloc(2 * slots * sizeof(int));
    sp->part = malloc((size_t)n * sizeof *sp->part);
    if (!sp->counts || !sp->flows || !sp->reqs || !sp->owner || !sp->part) {
        snprintf(err, COLL_ERRLEN, "libcollective: no memory for %d-rank allreduce tables", n);
        return COLL_ERR_NOMEM;
    }
    sp->done = sp->owner + slots;
    sp->displs = sp->counts + n;
    for (int j = 0; j < n; j++) {
        sp->displs[j] = (int)(count * (size_t)j / (size_t)n);
        sp->counts[j] = (int)(count * (size_t)(j + 1) / (size_t)n) - sp->displs[j];
    }
    return COLL_OK;
}

static void split_free(struct split *sp)
{
    free(sp->part);
    free(sp->owner);
    free(sp->reqs);
    free(sp->flows);
    free(sp->counts);
}

/* Adds a flow of n elements (none for n == 0) to or from `peer` to the phase. */
static void flow(struct split *sp, int is_send, const void *buf, int n, int peer)
{
    if (n)
        sp->flows[sp->nflows++] = (struct flow){(char *)buf, n, peer, is_send};
}

/* The reduce-scatter's flows (elements of es bytes): rank i's chunk of data goes to rank i, and this rank's
 * chunk of every other rank's data comes into parts + i x (this rank's count). */
static void flows_scatter(struct split *sp, const void *data, void *parts, size_t es)
{
    const int mine = sp->counts[sp->me];
    for (int i = 0; i < sp->n; i++)
        if (i != sp->me) {
            flow(sp, 0, (char *)parts + (size_t)i * (size_t)mine * es, mine, i);
            flow(sp, 1, (const char *)data + (size_t)sp->displs[i] * es, sp->counts[i], i);
        }
}

/* The allgather's flows: this rank's chunk of data to every other rank, theirs into their places in data. */
static void flows_gather(struct split *sp, void *data, size_t es)
{
    for (int i = 0; i < sp->n; i++)
        if (i != sp->me) {
            flow(sp, 0, (char *)data + (size_t)sp->displs[i] * es, sp->counts[i], i);
            flow(sp, 1, (char *)data + (size_t)sp->displs[sp->me] * es, sp->counts[sp->me], i);
        }
}

/* Posts flow f's next message (per elements of es bytes at most) in slot k. */
static int flow_post(struct split *sp, int f, int k, MPI_Comm comm, MPI_Datatype type, int es, int per, char *err)
{
    struct flow *fl = &sp->flows[f];
    const int m = fl->left < per ? fl->left : per;
    int rc = fl->is_send ? MPI_Isend(fl->buf, m, type, fl->peer, 0, comm, &sp->reqs[k])
                         : MPI_Irecv(fl->buf, m, type, fl->peer, 0, comm, &sp->reqs[k]);
    if (rc != MPI_SUCCESS)
        return coll_mpi_error(err, fl->is_send ? "MPI_Isend (allreduce)" : "MPI_Irecv (allreduce)", rc);
    fl->buf += (size_t)m * (size_t)es;
    fl->left -= m;
    sp->owner[k] = f;
    return COLL_OK;
}

/* Runs the phase's flows to their end, each keeping up to its window of messages in flight, without
 * spinning (as coll_mpi_wait), and empties the list. */
static int flows_run(struct split *sp, MPI_Comm comm, MPI_Datatype type, char *err)
{
    int es, nreq = 0, rc = COLL_OK;
    MPI_Type_size(type, &es);
    const int per = sp->pieced ? (int)(WIRE_PIECE / (size_t)es) : INT_MAX;
    const int window = sp->pieced ? WIRE_WINDOW : 1;
    for (int f = 0; f < sp->nflows && !rc; f++)
        for (int w = 0; w < window && sp->flows[f].left && !rc; w++)
            rc = flow_post(sp, f, nreq++, comm, type, es, per, err);
    double nap = 0;
    while (!rc) {
        int out = 0;
        for (int look = 0; look < 2 && !out; look++) /* twice: see coll_mpi_wait */
            if ((rc = MPI_Testsome(nreq, sp->reqs, &out, sp->done, MPI_STATUSES_IGNORE)) != MPI_SUCCESS)
                return coll_mpi_error(err, "MPI_Isend/MPI_Irecv (allreduce)", rc);
        if (out == MPI_UNDEFINED) /* every slot empty: the phase is complete */
            break;
        if (!out)
            coll_nap(&nap);
        for (int i = 0; i < out && !rc; i++)
            if (sp->flows[sp->owner[sp->done[i]]].left)
                rc = flow_post(sp, sp->owner[sp->done[i]], sp->done[i], comm, type, es, per, err);
    }
    sp->nflows = 0;
    return rc;
}

/* Rank-ordered float32 allreduce of count (<= MPI_PIECE) elements on comm, see the top of the file: a
 * reduce-scatter and an allgather, each of point-to-point messages straight between the ranks' buffers
 * and a kept scratch. */
static int split_f32(MPI_Comm comm, const float *send, float *recv, size_t count, float divide, int pieced,
                     char *err)
{
    struct split sp = {0};
    int rc = split_new(&sp, comm, count, pieced, err);
    if (rc)
        goto out;
    const int n = sp.n, me = sp.me;
    const size_t mine = (size_t)sp.counts[me];
    if ((rc = scratch_reserve(mine * (size_t)n * sizeof(float), err)))
        goto out;
    /* Reduce-scatter: chunk j of this rank's data goes to rank j; chunk `me` of every rank comes here. */
    for (int i = 0; i < n; i++)
        sp.part[i] = i == me ? send + sp.displs[me] : (const float *)scratch + (size_t)i * mine;
    flows_scatter(&sp, send, scratch, sizeof(float));
    if ((rc = flows_run(&sp, comm, MPI_FLOAT, err)))
        goto out;
    float *own = recv + sp.displs[me];
    if (mine && me >= 2 && sp.part[me] == own) { /* in place: coll_sum_f32 overwrites own before it adds part[me] */
        sp.part[me] = (const float *)scratch + (size_t)me * mine;
        memcpy((float *)sp.part[me], own, mine * sizeof(float));
    }
    coll_sum_f32(own, sp.part, n, mine, divide);
    /* Allgather: the reduced chunk to every rank, theirs into recv (the sends above are complete, so an
     * in-place recv may now be written). */
    flows_gather(&sp, recv, sizeof(float));
    rc = flows_run(&sp, comm, MPI_FLOAT, err);
out:
    split_free(&sp);
    return rc;
}

/* split_f32 with float16 on the wire (COLL_COMPRESS=fp16, hier.h): every rank's values rounded to float16
 * (its own chunk too, so that an element's result does not depend on which rank owns it, and fused equals
 * one by one), summed in float32 in rank order, divided, rounded to float16 once more and sent back so. The
 * scratch holds the float32 parts, then this rank's whole buffer and the received chunks as float16. */
static int split_f16(MPI_Comm comm, const float *send, float *recv, size_t count, float divide, int pieced,
                     char *err)
{
    struct split sp = {0};
    int rc = split_new(&sp, comm, count, pieced, err);
    if (rc)
        goto out;
    const int n = sp.n, me = sp.me;
    const size_t mine = (size_t)sp.counts[me];
    if ((rc = scratch_reserve(mine * (size_t)n * (sizeof(float) + sizeof(uint16_t)) + count * sizeof(uint16_t),
                              err)))
        goto out;
    float *f32 = scratch;
    uint16_t *all16 = (uint16_t *)(f32 + mine * (size_t)n), *in16 = all16 + count;
    coll_f32_to_f16(all16, send, count);
    for (int i = 0; i < n; i++)
        sp.part[i] = f32 + (size_t)i * mine;
    flows_scatter(&sp, all16, in16, sizeof(uint16_t));
    if ((rc = flows_run(&sp, comm, MPI_UINT16_T, err)))
        goto out;
    for (int i = 0; i < n; i++)
        coll_f16_to_f32((float *)sp.part[i], i == me ? all16 + sp.displs[me] : in16 + (size_t)i * mine, mine);
    float *own = recv + sp.displs[me];
    coll_sum_f32(own, sp.part, n, mine, divide);
    coll_f32_to_f16(all16 + sp.displs[me], own, mine); /* its sends are complete */
    coll_f16_to_f32(own, all16 + sp.displs[me], mine);
    flows_gather(&sp, all16, sizeof(uint16_t));
    rc = flows_run(&sp, comm, MPI_UINT16_T, err);
    for (int i = 0; i < n && !rc; i++)
        if (i != me)
            coll_f16_to_f32(recv + sp.displs[i], all16 + sp.displs[i], (size_t)sp.counts[i]);
out:
    split_free(&sp);
    return rc;
}

int coll_mpi_allreduce_f32(MPI_Comm comm, const float *send, float *recv, size_t count, float divide, int fp16,
                           int across_hosts, char *err)
{
    for (size_t off = 0; off < count; off += MPI_PIECE) {
        size_t n = count - off < MPI_PIECE ? count - off : MPI_PIECE;
        int rc = (fp16 ? split_f16 : split_f32)(comm, send + off, recv + off, n, divide, across_hosts, err);
        if (rc)
            return rc;
    }
    return COLL_OK;
}

static int allreduce(const void *send, void *recv, size_t count, enum coll_dtype dtype, enum coll_op op, char *err)
{
    size_t es = coll_dtype_size(dtype);
    if (!coll_world.use_mpi) {
        if (send != recv && count)
            memcpy(recv, send, count * es);
        return COLL_OK; /* one rank: the sum is the value, and the average divides by 1 */
    }
    for (size_t off = 0; off < count; off += MPI_PIECE) {
        size_t n = count - off < MPI_PIECE ? count - off : MPI_PIECE;
        const char *s = (const char *)send + off * es;
        char *r = (char *)recv + off * es;
        int rc;
        if (dtype == COLL_FLOAT32 && coll_world.size > 1) {
            const float divide = op == COLL_AVERAGE ? (float)coll_world.size : 0.0f;
            /* pieced where every rank is a host of its own; several on a host go the hierarchical way, or
             * flat with whole messages */
            const int wire = coll_world.env.wire_pieces;
            if ((rc = coll_mpi_allreduce_f32(coll_world.data, (const float *)s, (float *)r, n, divide,
                                             coll_world.compress, wire < 0 ? coll_world.hosts == coll_world.size : wire,
                                             err)))
                return rc;
            continue;
        }
        MPI_Request req;
        rc = MPI_Iallreduce(s == r ? MPI_IN_PLACE : s, r, (int)n, mpi_type(dtype), MPI_SUM, coll_world.data, &req);
        if ((rc = finish(rc, &req, "MPI_Iallreduce", err)))
            return rc;
        if (op == COLL_AVERAGE)
            divide(r, n, dtype, coll_world.size);
    }
    return COLL_OK;
}

static int broadcast(void *buf, size_t count, enum coll_dtype dtype, int root, char *err)
{
    if (!coll_world.use_mpi)
        return COLL_OK;
    size_t es = coll_dtype_size(dtype);
    for (size_t off = 0; off < count; off += MPI_PIECE) {
        size_t n = count - off < MPI_PIECE ? count - off : MPI_PIECE;
        MPI_Request req;
        int rc = MPI_Ibcast((char *)buf + off * es, (int)n, mpi_type(dtype), root, coll_world.data, &req);
        if ((rc = finish(rc, &req, "MPI_Ibcast", err)))
            return rc;
    }
    return COLL_OK;
}

static int allgather(const void *send, void *recv, size_t count, enum coll_dtype dtype, char *err)
{
    size_t es = coll_dtype_size(dtype);
    char *own = (char *)recv + (size_t)coll_world.rank * count * es;
    if (!coll_world.use_mpi) {
        if (send != own && count)
            memmove(own, send, count * es);
        return COLL_OK;
    }
    if (count > INT_MAX) {
        snprintf(err, COLL_ERRLEN, "libcollective: allgather of %zu elements per rank exceeds MPI's int count",
                 count);
        return COLL_ERR_ARG;
    }
    MPI_Request req;
    int rc = MPI_Iallgather(send == own ? MPI_IN_PLACE : send, (int)count, mpi_type(dtype), recv, (int)count,
                            mpi_type(dtype), coll_world.data, &req);
    return finish(rc, &req, "MPI_Iallgather", err);
}

int coll_mpi_barrier(char *err)
{
    if (!coll_world.use_mpi)
        return COLL_OK;
    MPI_Request req;
    int rc = MPI_Ibarrier(coll_world.data, &req);
    return finish(rc, &req, "MPI_Ibarrier", err);
}

static int host_alloc(void **p, size_t bytes, char *err)
{
    if (!(*p = malloc(bytes ? bytes : 1))) {
        snprintf(err, COLL_ERRLEN, "libcollective: no memory for %zu bytes of host scratch", bytes);
        return COLL_ERR_NOMEM;
    }
    return COLL_OK;
}

static int host_copy(void *dst, const void *src, size_t bytes, char *err)
{
    (void)err;
    memcpy(dst, src, bytes);
    return COLL_OK;
}

/* Each call above returns complete: nothing is ever queued. */
static int host_sync(char *err)
{
    (void)err;
    return COLL_OK;
}

const struct coll_backend coll_mpi_backend = {
    .name = "MPI",
    .alloc = host_alloc,
    .free = free,
    .copy = host_copy,
    .allreduce = allreduce,
    .broadcast = broadcast,
    .allgather = allgather,
    .sync = host_sync,
};
