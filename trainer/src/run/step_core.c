/* step_core: one training step of one rank (step_core.h). */
#include "run/step_core.h"

#include <stdio.h>
#include <string.h>

#include "collective.h"
#include "run/progress.h"

struct allreduce_ctx {
    struct step_core *c;
    int failed;
};

/* coll_allreduce_apply_async's function (collective.h), on libcollective's thread: RMSprop on the
 * parameters of these gradients. The ranks it answers for all use the parameters and accumulators that
 * this rank uses (step_core_create), so one update serves them all. The model's layers are done with
 * these parameters: backward hands a layer's gradients over after its input gradient, and the next
 * forward starts after coll_wait_all, which returns once every rank's updates have. */
static void apply_update(void *vc, float *at, size_t n, const float *reduced, int first_rank, int nranks)
{
    (void)first_rank, (void)nranks;
    struct step_core *c = vc;
    const size_t i = (size_t)(at - c->model.grads);
    rmsprop_apply(&c->opt, c->model.params + i, c->opt.acc + i, reduced, n, c->model.step->lr_t);
}

static void allreduce_layer(void *vctx, float *grads, int first, int count)
{
    struct allreduce_ctx *ctx = vctx;
    struct step_core *c = ctx->c;
    size_t off = model_tensor(first)->offset, n = 0;
    for (int t = first; t < first + count; t++)
        n += model_tensor(t)->count;
    coll_handle h;
    int rc;
    /* A device table queues work: the gradients must be final before NCCL's stream reads them. Waiting
     * here, layer by layer, keeps the overlap: the allreduce of this layer runs during the next layer's
     * backward, on another stream. */
    if (c->model.k->sync)
        c->model.k->sync();
    if (ctx->failed)
        return;
    if (c->applies)
        rc = coll_allreduce_apply_async(grads + off, n, COLL_AVERAGE, apply_update, c, &h);
    else
        rc = coll_allreduce_async(grads + off, grads + off, n, COLL_FLOAT32, COLL_AVERAGE, &h);
    ctx->failed = rc != COLL_OK;
}

int step_core_create(struct step_core *c, const struct kernels *k, int max_batch, double lr, int size)
{
    memset(c, 0, sizeof *c);
    c->size = size;
    /* Several ranks with a host table: one region holds the gradients, the parameters and the RMSprop
     * accumulators, each rounded up to 64 bytes, and then the votes, so that the votes join the gradients'
     * batch (step_queue). Each gradient tensor's reduced values update the parameters as libcollective
     * hands them over (apply_update). When the region is node-shared, every rank trains rank 0's
     * parameters and accumulators, the one copy of the host, and each rank updates only its slice of
     * them (ZeRO's sharded update, with nothing to gather): each does 1/size of the optimizer's work, reads
     * the summed gradients from L1 instead of from memory, and no rank writes a copy of its own (the
     * other ranks' parameter parts go unused: coll_host_alloc gives every rank the same size). One
     * region gives every part the same kind of memory. Device gradients go to NCCL; their region holds
     * the votes alone. */
    const size_t stride = (MODEL_NPARAMS + 15) & ~(size_t)15, lent = size > 1 && !k->device ? 3 * stride : 0;
    if (size > 1 && !(c->shared = coll_host_alloc((lent + STEP_VOTES) * sizeof(float)))) {
        fprintf(stderr, "cifar-train: no memory for the gradients and votes: %s\n", coll_last_error());
        return -1;
    }
    c->vote_slot = c->shared ? c->shared + lent : NULL;
    c->applies = lent > 0;
    float *grads = lent ? c->shared : NULL, *state = lent ? coll_host_peer(c->shared + stride, 0) : NULL;
    if (lent && !state) /* private memory: this rank's own */
        state = c->shared + stride;
    float *params = state, *acc = state ? state + stride : NULL;
    if (model_create(&c->model, k, max_batch, params, grads) != 0 ||
        rmsprop_create(&c->opt, k, MODEL_NPARAMS, lr, RMS_RHO, RMS_DECAY, RMS_EPSILON, acc) != 0) {
        step_core_destroy(c);
        return -1;
    }
    step_core_set_graphs(c, 1);
    return 0;
}

static void drop_graph(struct step_core *c)
{
    if (c->graph)
        c->model.k->graph->destroy(c->graph);
    c->graph = NULL;
}

void step_core_set_graphs(struct step_core *c, int on)
{
    drop_graph(c);
    /* Several ranks: backward waits for the device layer by layer to hand gradients to NCCL. */
    graph_plan_init(&c->plan, STEP_GRAPH_WARMUP, !on || !c->model.k->graph || c->size > 1);
}

void step_core_destroy(struct step_core *c)
{
    const struct kernels *k = c->model.k;
    if (k)
        drop_graph(c);
    if (c->opt.acc)
        rmsprop_destroy(&c->opt, k);
    if (k)
        model_destroy(&c->model);
    coll_host_free(c->shared);
    c->shared = NULL;
    c->vote_slot = NULL;
    c->applies = 0;
}

/* This rank's votes into c->votes (zeros without a vote function). */
static void cast_votes(struct step_core *c)
{
    if (c->vote)
        c->vote(c->vote_ctx, c->votes);
}

/* Several ranks: this rank's votes, queued right after the last gradient tensor so that they are granted
 * and reduced in the gradients' batch (node-shared memory: the same pass; MPI: the fusion buffer) instead
 * of in a collective round of their own. COLL_AVERAGE like the gradients, so that they fuse with them: an
 * average is nonzero where any rank's vote is. A device's gradients go to NCCL and the votes, host
 * memory, to the host path in the same coll_wait_all (libcollective tells the kinds apart per request). */
static int queue_votes(struct step_core *c)
{
    coll_handle h;
    cast_votes(c);
    memcpy(c->vote_slot, c->votes, sizeof c->votes);
    return coll_allreduce_async(c->vote_slot, c->vote_slot, STEP_VOTES, COLL_FLOAT32, COLL_AVERAGE, &h) == COLL_OK
               ? 0
               : -1;
}

/* The part of a step that a graph records: everything between the step's uploads and its iteration count. */
static int step_queue(struct step_core *c, int B)
{
    struct model *m = &c->model;
    struct allreduce_ctx ctx = {c, 0};
    model_forward(m, B, 1);
    model_backward(m, B, c->size > 1 ? allreduce_layer : NULL, &ctx);
    if (c->size > 1 && !ctx.failed && queue_votes(c) != 0)
        ctx.failed = 1;
    const double t0 = c->size > 1 ? progress_now() : 0;
    if (c->size > 1 && (coll_wait_all() != COLL_OK || ctx.failed)) {
        fprintf(stderr, "cifar-train: gradient allreduce failed: %s\n", coll_last_error());
        return -1;
    }
    if (c->size > 1) {
        c->wait_sec += progress_now() - t0;
        memcpy(c->votes, c->vote_slot, sizeof c->votes);
    }
    if (!c->applies) /* else the reductions have updated the parameters */
        rmsprop_queue(&c->opt, m->k, m->params, m->grads, &m->step->lr_t);
    return 0;
}

int step_core_step(struct step_core *c, int B, uint64_t dropout_key)
{
    struct model *m = &c->model;
    const struct kernels *k = m->k;
    model_set_step(m, dropout_key, rmsprop_lr_t(&c->opt));
    enum graph_action a = graph_plan_step(&c->plan, B);
    if (a == GRAPH_REPLAY && k->graph->stale(c->graph)) { /* a scratch buffer moved under it */
        graph_plan_invalidate(&c->plan);
        drop_graph(c);
        a = graph_plan_step(&c->plan, B);
    }
    if (a == GRAPH_INVALIDATED)
        drop_graph(c);
    if (a == GRAPH_CAPTURE) {
        k->graph->capture_begin();
        const int rc = step_queue(c, B);
        c->graph = k->graph->capture_end();
        graph_plan_captured(&c->plan, c->graph != NULL);
        if (rc != 0)
            return -1;
        a = c->graph ? GRAPH_REPLAY : GRAPH_RUN; /* recorded, not run: run it now either way */
    }
    if (a == GRAPH_REPLAY)
        k->graph->replay(c->graph);
    else if (step_queue(c, B) != 0)
        return -1;
    if (c->size == 1) /* not in step_queue: a graph may be recording it */
        cast_votes(c);
    c->opt.iterations++;
    return 0;
}
