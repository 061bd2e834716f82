#include "run/train.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/atomic_file.h"
#include "input/augment.h"
#include "io/cifar_data.h"
#include "run/checkpoint_files.h"
#include "run/draws.h"
#include "collective.h"
#include "input/batch_source.h"
#include "io/keras_h5.h"
#include "io/make_dirs.h"
#include "run/progress.h"
#include "run/recipe.h"
#include "core/rng.h"
#include "io/step_export.h"
#include "run/watch.h"

#define RMS_RHO 0.9
#define RMS_DECAY 1e-6
#define RMS_EPSILON 1e-7

void train_options_default(struct train_options *o)
{
    memset(o, 0, sizeof *o);
    o->dir = ".";
    o->batch = 32;
    o->augment = 1;
    o->seed = 1;
    o->log_every = 50;
    o->checkpoint_dir = ".";
    o->kernels = &kernels_cpu;
    o->graphs = 1;
}

/* ---- the per-step core ---- */

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

/* ---- helpers ---- */

static int cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return 1;
}

/* All ranks agree on a failure of one: returns nonzero everywhere when `failed` is nonzero anywhere. */
static int any_failed(int failed)
{
    int v = failed != 0;
    if (coll_size() > 1 && coll_allreduce(&v, &v, 1, COLL_INT32, COLL_SUM) != COLL_OK) {
        fprintf(stderr, "cifar-train: allreduce failed: %s\n", coll_last_error());
        return 1;
    }
    return v != 0;
}

/* ---- stopping: signals and non-finite numbers (train.h) ---- */

static volatile sig_atomic_t stop_signal; /* set by the handler or take_stop_signals, read at step boundaries */
static sigset_t stop_signals;               /* SIGTERM, SIGINT, SIGUSR1 */

static void on_stop_signal(int sig) { stop_signal = sig; }

/* The stop signals are blocked in the calling thread (main, before it starts any) and so in every thread
 * started after it: OpenMP's, CUDA's, MPI's, libcollective's. A handler must never interrupt a compute
 * thread: oneDNN's JIT sgemm runs with its stack pointer moved into a heap buffer, and the kernel pushes
 * the signal frame below it, over malloc's chunk headers ("corrupted size vs. prev_size" in dnnl_sgemm's
 * free; a no-op SIGUSR2 handler and a stream of SIGUSR2 at the compute thread crash 3 runs of 3). Blocked
 * signals stay pending until take_stop_signals() reads them at a step boundary. The handler remains for
 * threads a library started before main (OpenBLAS's pool), which never run oneDNN. */
void train_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGUSR1);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
}

/* Consumes the stop signals pending on this thread or the process, without waiting. */
static void take_stop_signals(void)
{
    const struct timespec now = {0, 0};
    int sig;
    while ((sig = sigtimedwait(&stop_signals, NULL, &now)) > 0)
        stop_signal = sig;
}

/* The stop signals as the ranks vote on them (cast_stop_vote, agree_signal): one vote each, so that rank 0
 * names a signal that only another rank has taken yet (srun passes a signal on to the ranks one by one).
 * When ranks took different ones, the first here is named. */
#define STOP_NSIGNALS 3
_Static_assert(STOP_NSIGNALS + 1 == STEP_VOTES, "a vote per stop signal and one for a non-finite loss");
static const int stop_signo[STOP_NSIGNALS] = {SIGTERM, SIGINT, SIGUSR1};
static const char *const stop_signame[STOP_NSIGNALS] = {"SIGTERM", "SIGINT", "SIGUSR1"};

/* The name of the first signal with a nonzero vote, NULL when none has one. */
static const char *voted_signal(const float *votes)
{
    for (int k = 0; k < STOP_NSIGNALS; k++)
        if (votes[k] != 0)
            return stop_signame[k];
    return NULL;
}

enum { STOP_SIGNAL = 1, STOP_NONFINITE = 2 };

/* This rank's stop reasons at the end of a training step: the signals taken by then, and whether the loss
 * is non-finite where the step reads it (every step on the CPU, every DEVICE_LOSS_EVERY steps and the
 * last one of an epoch with a device). The step core asks for it (step_core.vote) and averages the
 * ranks' votes with the gradients, so that the ranks agree on a stop at no collective of its own. With
 * several ranks the vote is cast once backward has queued the last gradients, before the step waits for
 * them: a signal that comes later (during that wait or the update) is seen one step later than a vote
 * after the step would see it; every rank still stops after the same step. */
struct stop_vote {
    struct model *m;
    int check;       /* read the loss at this step */
    double loss_sum; /* the epoch's summed loss as last read */
    int correct;
    int nonfinite;   /* this rank's loss is not finite at this step */
};

static void cast_stop_vote(void *ctx, float *votes)
{
    struct stop_vote *v = ctx;
    take_stop_signals();
    if (v->check)
        model_read_sums(v->m, &v->loss_sum, &v->correct);
    v->nonfinite = v->check && !isfinite(v->loss_sum);
    for (int k = 0; k < STOP_NSIGNALS; k++)
        votes[k] = stop_signal == stop_signo[k];
    votes[STOP_NSIGNALS] = v->nonfinite;
}

/* The stop reasons (bits) of any rank, from the step core's averaged votes. */
static int stop_reasons(const float *votes)
{
    return (voted_signal(votes) ? STOP_SIGNAL : 0) | (votes[STOP_NSIGNALS] != 0 ? STOP_NONFINITE : 0);
}

/* Every rank calls this at the same point, outside a step (the end of an epoch): 1 when any rank has a
 * stop signal (*name: which, as voted_signal names it), 0 when none has, -1 when the allreduce failed
 * (said). */
static int agree_signal(const char **name)
{
    take_stop_signals();
    int32_t v[STOP_NSIGNALS];
    float votes[STOP_NSIGNALS];
    for (int k = 0; k < STOP_NSIGNALS; k++)
        v[k] = stop_signal == stop_signo[k];
    if (coll_size() > 1 && coll_allreduce(v, v, STOP_NSIGNALS, COLL_INT32, COLL_SUM) != COLL_OK) {
        fprintf(stderr, "cifar-train: allreduce failed: %s\n", coll_last_error());
        return -1;
    }
    for (int k = 0; k < STOP_NSIGNALS; k++)
        votes[k] = (float)v[k];
    *name = voted_signal(votes);
    return *name != NULL;
}

/* The first non-finite value of v (MODEL_NPARAMS floats in model_tensor() layout): its tensor, or NULL. */
static const struct model_tensor *nonfinite_tensor(const float *v, size_t *index)
{
    for (int t = 0; t < model_ntensors(); t++) {
        const struct model_tensor *mt = model_tensor(t);
        for (size_t i = 0; i < mt->count; i++)
            if (!isfinite(v[mt->offset + i])) {
                *index = i;
                return mt;
            }
    }
    return NULL;
}

/* ---- output directories and checkpoints ---- */

/* --dir/saved_models and --checkpoint-dir, before any work: created, proven writable by creating (and
 * removing) a temporary file the way every save does, and rid of temporaries a killed writer left. */
static int prepare_dir(const char *opt, const char *dir)
{
    char err[1024], probe[4200];
    struct stat st;
    if (make_dirs(dir) != 0) {
        fprintf(stderr, "cifar-train: %s %s: cannot create directory: %s\n", opt, dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "cifar-train: %s %s: not a directory\n", opt, dir);
        return -1;
    }
    const int removed = atomic_file_cleanup_dir(dir);
    if (removed > 0)
        printf("Removed %d stale temporary file%s in %s (left by a writer that was killed)\n", removed,
               removed == 1 ? "" : "s", dir);
    struct atomic_file af;
    snprintf(probe, sizeof probe, "%s/.cifar-train-probe", dir);
    if (atomic_file_begin(&af, probe, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: %s %s: not writable: %s\n", opt, dir, err);
        return -1;
    }
    atomic_file_abort(&af);
    return 0;
}

/* Data: the directory to read, downloading first with --download (one process per node fetches). */
static int resolve_data(const struct train_options *o, char *dir, size_t len)
{
    int failed = 0;
    if (!o->download) {
        if (!o->data) {
            if (coll_rank() == 0)
                fprintf(stderr, "cifar-train: no data: pass --data DIR (a cifar-10-batches-bin directory) "
                                "or --download\n");
            return -1;
        }
        snprintf(dir, len, "%s", o->data);
        return 0;
    }
    char parent[4096];
    const char *home = getenv("HOME");
    if (o->data)
        snprintf(parent, sizeof parent, "%s", o->data);
    else
        snprintf(parent, sizeof parent, "%s/.keras/datasets", home ? home : ".");
    if (coll_local_rank() == 0) {
        char err[1024];
        if (cifar_download(parent, dir, len, err, sizeof err) != 0) {
            fprintf(stderr, "cifar-train: %s\n", err);
            failed = 1;
        }
    }
    if (any_failed(failed))
        return -1;
    if (snprintf(dir, len, "%s/%s", parent, CIFAR_ARCHIVE_DIR) >= (int)len) {
        fprintf(stderr, "cifar-train: %s: path too long\n", parent);
        return -1;
    }
    return 0;
}

static void gather_labels(const struct cifar_set *s, const uint32_t *idx, int n, uint8_t *out)
{
    for (int i = 0; i < n; i++)
        out[i] = s->labels[idx ? idx[i] : (uint32_t)i];
}

/* Loss and accuracy over the test set, split across ranks and summed; the same result on every rank. */
static int evaluate_set(struct model *m, struct batch_source *src, const struct cifar_set *test, int batch,
                        double *loss, double *acc, struct progress *bar)
{
    const int rank = coll_rank(), size = coll_size();
    const size_t lo = test->n * rank / size, hi = test->n * (rank + 1) / size;
    double loss_sum;
    int correct;
    model_clear_sums(m);
    for (size_t i = lo; i < hi; i += batch) {
        int B = (int)(hi - i < (size_t)batch ? hi - i : (size_t)batch);
        if (batch_source_load(src, test->images + i * CIFAR_IMAGE_BYTES, NULL, test->labels + i, B, NULL) != 0)
            return -1;
        model_forward(m, B, 0);
        if (bar)
            progress_update(bar, (int)((i + B - lo) * size), NULL, 0);
    }
    model_read_sums(m, &loss_sum, &correct);
    float sums[2] = {(float)loss_sum, (float)correct};
    if (size > 1 && coll_allreduce(sums, sums, 2, COLL_FLOAT32, COLL_SUM) != COLL_OK) {
        fprintf(stderr, "cifar-train: allreduce failed: %s\n", coll_last_error());
        return -1;
    }
    *loss = size > 1 ? sums[0] / (double)test->n : loss_sum / (double)test->n;
    *acc = size > 1 ? sums[1] / (double)test->n : (double)correct / (double)test->n;
    return 0;
}

/* Rank 0's save of the current weights and accumulators to `path`: 0, -1 after an error, or
 * TRAIN_EXIT_NONFINITE (nothing written) when a value is NaN or infinite; `where` names the step in that
 * message. */
static int save_model(const char *path, const char *where, const struct step_core *c, float *host_params,
                      float *host_acc, const struct keras_train_state *st)
{
    char err[1024];
    size_t i;
    model_get_params(&c->model, host_params);
    c->model.k->download(host_acc, c->opt.acc, MODEL_NPARAMS * sizeof(float));
    const struct model_tensor *w = nonfinite_tensor(host_params, &i), *t = w ? w : nonfinite_tensor(host_acc, &i);
    if (t) {
        fprintf(stderr, "cifar-train: %s: non-finite %s in %s/%s (index %zu): training stopped, %s not written\n",
                where, w ? "weight" : "RMSprop accumulator", t->layer, t->weight, i, path);
        return TRAIN_EXIT_NONFINITE;
    }
    if (keras_save(path, host_params, host_acc, st, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: %s\n", err);
        return -1;
    }
    return 0;
}

/* times (epoch lines): seconds in step_core_step, of which waiting for the gradient allreduces, and CPU
 * seconds of libcollective's threads, over the epoch (make bench-scaling reads them). */
static void json_line(FILE *f, const char *type, int epoch, int step, int steps, double loss, double acc,
                      const double *val, double ips, double lr, double secs, const double *times)
{
    if (!f)
        return;
    fprintf(f, "{\"type\":\"%s\",\"epoch\":%d,\"step\":%d,\"steps\":%d,\"loss\":%.6g,\"acc\":%.6g", type, epoch,
            step, steps, loss, acc);
    if (val)
        fprintf(f, ",\"val_loss\":%.6g,\"val_acc\":%.6g", val[0], val[1]);
    fprintf(f, ",\"images_per_sec\":%.1f,\"lr\":%.6g,\"seconds\":%.3f", ips, lr, secs);
    if (times)
        fprintf(f, ",\"step_seconds\":%.4f,\"wait_seconds\":%.4f,\"progress_cpu_seconds\":%.4f", times[0], times[1],
                times[2]);
    fputs("}\n", f);
    fflush(f);
}

/* ---- the run ---- */

struct run {
    const struct train_options *o;
    int rank, size, epochs, start_epoch;
    int start_step; /* steps of start_epoch already done (a checkpoint written on a signal) */
    int threads;    /* compute threads per process */
    struct cifar_set train, test;
    struct step_core core;
    float *host_params, *host_acc;
    uint8_t *labels;
    uint32_t *order;
    struct augment_params *aug;
    struct batch_source batches; /* into the model's input: on the host, or the device's input ring */
    struct stop_vote vote;       /* this rank's, cast by core's steps (cast_stop_vote) */
    struct keras_train_state state;
    FILE *json;
    struct watch watch; /* rank 0's CSV, TensorBoard and PNG (watching: opened) */
    int watching;
    struct step_export export; /* --dump-steps; export.steps is 0 without it */
};

/* What a checkpoint's writer did differently from this run, and what that changes (rank 0). */
static void warn_resume_differs(const struct keras_train_state *was, const struct keras_train_state *now,
                                const char *from)
{
    if (was->world_size != now->world_size)
        fprintf(stderr, "cifar-train: warning: %s was written by %lld processes, this run has %lld: the sample "
                        "order, augmentation and dropout draws of each process differ from an uninterrupted run, "
                        "so the model will differ from one\n", from, (long long)was->world_size,
                (long long)now->world_size);
    if (was->threads != now->threads)
        fprintf(stderr, "cifar-train: warning: %s was written at %lld threads per process, this run uses %lld: sums "
                        "are added in another order, so the model will not be bit-identical to an uninterrupted "
                        "run (pass --threads %lld for that)\n", from, (long long)was->threads,
                (long long)now->threads, (long long)was->threads);
    if (was->batch != now->batch)
        fprintf(stderr, "cifar-train: warning: %s was written at --batch-size %lld, this run uses %lld\n", from,
                (long long)was->batch, (long long)now->batch);
    if (strcmp(was->generator, now->generator) != 0)
        fprintf(stderr, "cifar-train: warning: %s was written by %s, this is %s\n", from, was->generator,
                now->generator);
}

/* Initial state: fresh weights from the seed, or a checkpoint, on rank 0; then broadcast to all. */
static int initial_state(struct run *r)
{
    const struct train_options *o = r->o;
    int failed = 0;
    memset(&r->state, 0, sizeof r->state);
    r->state.lr = o->lr > 0 ? o->lr : 1e-4 * r->size;
    r->state.rho = RMS_RHO;
    r->state.decay = RMS_DECAY;
    r->state.epsilon = RMS_EPSILON;
    r->state.seed = o->seed;
    r->state.world_size = r->size;
    r->state.threads = r->threads;
    r->state.batch = o->batch;
    snprintf(r->state.generator, sizeof r->state.generator, "%s", o->generator ? o->generator : "cifar-train");
    if (r->rank == 0) {
        char path[4096];
        const char *from = o->resume;
        if (from && strcmp(from, "auto") == 0) {
            const int found = checkpoint_newest(o->checkpoint_dir, path, sizeof path);
            from = found == 1 ? path : NULL;
            failed = found < 0;
            if (found == 0)
                printf("No checkpoint in %s: starting from the beginning\n", o->checkpoint_dir);
        }
        if (from) {
            char err[1024];
            struct keras_train_state st;
            if (keras_load(from, r->host_params, r->host_acc, &st, err, sizeof err) != 0) {
                fprintf(stderr, "cifar-train: --resume: %s\n", err);
                failed = 1;
            } else if (st.step > 0 && st.batch != o->batch) {
                fprintf(stderr, "cifar-train: --resume: %s stopped in epoch %lld after step %lld of batches of %lld: "
                                "resume it with --batch-size %lld\n", from, (long long)st.epoch + 1,
                        (long long)st.step, (long long)st.batch, (long long)st.batch);
                failed = 1;
            } else {
                if (o->lr <= 0)
                    r->state.lr = st.lr;
                r->state.iterations = st.iterations;
                r->state.epoch = st.epoch;
                r->state.step = st.step;
                r->state.seed = st.seed;
                r->state.best_epoch = st.best_epoch;
                r->state.best_val_acc = st.best_val_acc;
                if (st.step)
                    printf("Resuming from %s (epoch %lld after step %lld)\n", from, (long long)st.epoch + 1,
                           (long long)st.step);
                else
                    printf("Resuming from %s (after epoch %lld)\n", from, (long long)st.epoch);
                warn_resume_differs(&st, &r->state, from);
            }
        } else if (!failed)
            model_init_params(r->host_params, o->seed);
        fflush(stdout);
    }
    if (any_failed(failed))
        return -1;
    if (r->size > 1 &&
        (coll_broadcast(r->host_params, MODEL_NPARAMS, COLL_FLOAT32, 0) != COLL_OK ||
         coll_broadcast(r->host_acc, MODEL_NPARAMS, COLL_FLOAT32, 0) != COLL_OK ||
         coll_broadcast(&r->state, sizeof r->state, COLL_UINT8, 0) != COLL_OK)) {
        fprintf(stderr, "cifar-train: broadcast of the initial state failed: %s\n", coll_last_error());
        return -1;
    }
    r->state.world_size = r->size;
    r->state.threads = r->threads;
    r->state.batch = o->batch;
    /* On one host every rank writes the same broadcast values into the one copy (step_core_create), so a
     * rank that starts its first step meanwhile reads them either way. */
    model_set_params(&r->core.model, r->host_params);
    r->core.opt.lr = r->state.lr;
    r->core.opt.iterations = r->state.iterations;
    r->core.model.k->upload(r->core.opt.acc, r->host_acc, MODEL_NPARAMS * sizeof(float));
    r->start_epoch = (int)r->state.epoch;
    r->start_step = (int)r->state.step;
    return 0;
}

static int load_data(struct run *r)
{
    char dir[4096], err[1024];
    if (resolve_data(r->o, dir, sizeof dir) != 0)
        return -1;
    int failed = 0;
    if (cifar_verify(dir, err, sizeof err) != 0 ||
        cifar_load_train(dir, r->o->limit_train, &r->train, err, sizeof err) != 0 ||
        cifar_load_test(dir, r->o->limit_test, &r->test, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: %s\n", err);
        failed = 1;
    } else if (r->train.n == 0 || r->test.n == 0) {
        fprintf(stderr, "cifar-train: %s: empty training or test set\n", dir);
        failed = 1;
    }
    return any_failed(failed) ? -1 : 0;
}

/* Rank 0 writes checkpoint-{epoch + 1}.h5 (step 0: the epoch is done) or checkpoint-{epoch + 1}-step-{step}.h5
 * (a stop after `step` steps of it), and all ranks agree on the outcome: 0, -1, or TRAIN_EXIT_NONFINITE. */
static int save_checkpoint(struct run *r, int epoch, int step)
{
    int rc = 0;
    r->state.epoch = step ? epoch : epoch + 1;
    r->state.step = step;
    r->state.iterations = r->core.opt.iterations;
    if (r->rank == 0) {
        char path[4096], where[64];
        int n = step ? snprintf(path, sizeof path, "%s/checkpoint-%d-step-%d.h5", r->o->checkpoint_dir, epoch + 1, step)
                     : snprintf(path, sizeof path, "%s/checkpoint-%d.h5", r->o->checkpoint_dir, epoch + 1);
        snprintf(where, sizeof where, "epoch %d, step %d", epoch + 1, step);
        if (n >= (int)sizeof path) {
            fprintf(stderr, "cifar-train: %s: path too long\n", r->o->checkpoint_dir);
            rc = -1;
        } else
            rc = save_model(path, where, &r->core, r->host_params, r->host_acc, &r->state);
        if (rc == 0 && !step) /* the new checkpoint is complete on disk: older ones may go */
            checkpoint_prune(r->o->checkpoint_dir, epoch + 1, r->o->keep_checkpoints,
                             r->o->keep_best ? (long)r->state.best_epoch : 0);
        if (rc == 0 && step)
            printf("\nSaved checkpoint at %s\n", path);
        fflush(stdout);
    }
    int32_t v[2] = {rc == -1, rc == TRAIN_EXIT_NONFINITE};
    if (r->size > 1 && coll_allreduce(v, v, 2, COLL_INT32, COLL_SUM) != COLL_OK) {
        fprintf(stderr, "cifar-train: allreduce failed: %s\n", coll_last_error());
        return -1;
    }
    return v[0] ? -1 : v[1] ? TRAIN_EXIT_NONFINITE : 0;
}

/* After step `s` (0-based) of `epoch`: the stop the ranks voted for in it (cast_stop_vote), if any.
 * Returns 0 to go on, or what run_epoch returns. */
static int after_step(struct run *r, int epoch, int s, int steps)
{
    const int stop = stop_reasons(r->core.votes);
    if (!stop)
        return 0;
    if (stop & STOP_NONFINITE) {
        if (r->vote.nonfinite)
            fprintf(stderr, "\ncifar-train: %sepoch %d, step %d/%d: the loss is %g: training stopped (non-finite "
                            "loss; nothing is saved from this run after the last checkpoint: lower --lr, or check "
                            "the checkpoint it resumed from)\n", r->size > 1 ? "a rank's " : "", epoch + 1, s + 1,
                    steps, r->vote.loss_sum);
        return TRAIN_EXIT_NONFINITE;
    }
    if (r->rank == 0) {
        printf("\n%s: stopping after epoch %d, step %d/%d\n", voted_signal(r->core.votes), epoch + 1, s + 1, steps);
        fflush(stdout);
    }
    const int rc = save_checkpoint(r, epoch, s + 1);
    return rc ? rc : TRAIN_EXIT_STOPPED;
}

/* Every rank must run the same recipe (recipe.h): gathered from all ranks and compared with rank 0's, so
 * that every rank refuses alike, and rank 0 says which ranks and fields differ. */
static int same_recipe(const struct run *r)
{
    if (r->size < 2)
        return 0;
    struct recipe mine, *all = calloc((size_t)r->size, sizeof *all);
    char msg[2048];
    recipe_of(&mine, r->o, r->size, &r->train, &r->test);
    if (!all || coll_allgather(&mine, all, RECIPE_NFIELDS, COLL_INT64) != COLL_OK) {
        fprintf(stderr, "cifar-train: comparing the ranks' recipes failed: %s\n", all ? coll_last_error() : "no memory");
        free(all);
        return -1;
    }
    const int differ = recipe_compare(all, r->size, msg, sizeof msg);
    free(all);
    if (differ && r->rank == 0)
        fprintf(stderr, "cifar-train: %d of %d ranks would run another recipe than rank 0; no rank starts:\n%s\n",
                differ, r->size, msg);
    return differ ? -1 : 0;
}

static int run_epoch(struct run *r, int epoch)
{
    const struct train_options *o = r->o;
    const size_t per_rank = o->shard ? r->train.n / r->size : r->train.n;
    const size_t first = o->shard ? per_rank * r->rank : 0;
    const int steps = (int)((per_rank + o->batch - 1) / o->batch);
    const uint64_t seed = r->state.seed;
    struct progress bar;
    if (r->rank == 0) {
        printf("Epoch %d/%d\n", epoch + 1, r->epochs);
        fflush(stdout);
        progress_start(&bar, stdout, steps);
    }
    draw_epoch_order(r->order, per_rank, first, rng_key(seed, epoch, 0, r->rank, RNG_SHUFFLE));
    double loss_sum = 0.0, t0 = progress_now(), times[3] = {0, -r->core.wait_sec, -coll_thread_cpu_seconds()};
    int correct = 0;
    size_t seen = 0;
    const int first_step = epoch == r->start_epoch ? r->start_step : 0;
    const int loss_every = r->core.model.k->device ? DEVICE_LOSS_EVERY : 1;
    model_clear_sums(&r->core.model);
    for (int s = first_step; s < steps; s++) {
        const uint32_t *idx = r->order + (size_t)s * o->batch;
        const int B = (int)(per_rank - (size_t)s * o->batch < (size_t)o->batch ? per_rank - (size_t)s * o->batch
                                                                                 : (size_t)o->batch);
        if (o->augment)
            draw_augment(rng_key(seed, epoch, s, r->rank, RNG_AUGMENT), B, CIFAR_H, CIFAR_W, r->aug);
        gather_labels(&r->train, idx, B, r->labels);
        if (batch_source_load(&r->batches, r->train.images, idx, r->labels, B, o->augment ? r->aug : NULL) != 0)
            return -1;
        const uint64_t dropout_key = rng_key(seed, epoch, s, r->rank, RNG_DROPOUT);
        const float lr_t = rmsprop_lr_t(&r->core.opt);
        if (r->export.steps && step_export_state(&r->export, &r->core.model, s, B, r->core.opt.acc) != 0)
            return -1;
        r->vote.check = (s + 1) % loss_every == 0 || s + 1 == steps;
        const double step_t0 = progress_now();
        if (step_core_step(&r->core, B, dropout_key) != 0)
            return -1;
        times[0] += progress_now() - step_t0;
        seen += B;
        if (r->export.steps) { /* --dump-steps: 1 ends the run once the N-th step is out */
            double before = loss_sum;
            model_read_sums(&r->core.model, &loss_sum, &correct);
            const int done = step_export_add(&r->export, &r->core.model, epoch, s, B, idx, o->augment ? r->aug : NULL,
                                             dropout_key, lr_t, loss_sum - before);
            if (done != 0)
                return done;
        }
        const int log_step = o->log_every > 0 && (s + 1) % o->log_every == 0 && s + 1 < steps;
        if (r->rank == 0 && (log_step || progress_due(&bar, s + 1))) {
            /* Reading the sums waits for the step: only when they are shown. */
            model_read_sums(&r->core.model, &loss_sum, &correct);
            char vals[128] = "";
            progress_value(vals, sizeof vals, "loss", loss_sum / seen);
            progress_value(vals, sizeof vals, "acc", (double)correct / seen);
            progress_update(&bar, s + 1, vals, 0);
            if (log_step) {
                double dt = progress_now() - t0;
                json_line(r->json, "step", epoch + 1, s + 1, steps, loss_sum / seen, (double)correct / seen, NULL,
                          seen * r->size / dt, rmsprop_lr_t(&r->core.opt), dt, NULL);
            }
        }
        const int stop = after_step(r, epoch, s, steps);
        if (stop != 0)
            return stop;
    }
    model_read_sums(&r->core.model, &loss_sum, &correct); /* before validation reuses them */
    const double train_time = progress_now() - t0;
    times[1] += r->core.wait_sec;
    times[2] += coll_thread_cpu_seconds();
    double val[2];
    if (evaluate_set(&r->core.model, &r->batches, &r->test, o->batch, &val[0], &val[1], NULL) != 0)
        return -1;
    if (r->rank == 0) {
        const double shown = seen ? (double)seen : 1.0; /* none when resumed after the last step */
        char vals[256] = "";
        progress_value(vals, sizeof vals, "loss", loss_sum / shown);
        progress_value(vals, sizeof vals, "acc", (double)correct / shown);
        progress_value(vals, sizeof vals, "val_loss", val[0]);
        progress_value(vals, sizeof vals, "val_acc", val[1]);
        progress_update(&bar, steps, vals, 1);
        json_line(r->json, "epoch", epoch + 1, steps, steps, loss_sum / shown, (double)correct / shown, val,
                  seen * r->size / train_time, rmsprop_lr_t(&r->core.opt), train_time, times);
        if (r->watching) /* before the checkpoint: a resume from the one before drops this row again */
            watch_epoch(&r->watch, &(struct watch_epoch){epoch, loss_sum / shown, (double)correct / shown, val[0],
                                                         val[1], seen * r->size / train_time,
                                                         rmsprop_lr_t(&r->core.opt)});
    }
    if (r->state.best_epoch == 0 || val[1] > r->state.best_val_acc) {
        r->state.best_epoch = epoch + 1;
        r->state.best_val_acc = val[1];
    }
    const int rc = save_checkpoint(r, epoch, 0);
    if (rc != 0)
        return rc;
    const char *signal = NULL;
    const int stop = agree_signal(&signal); /* a signal during validation or the save: stop here */
    if (stop > 0) {
        if (r->rank == 0)
            printf("%s: stopping after epoch %d (checkpoint-%d.h5)\n", signal, epoch + 1, epoch + 1);
        return TRAIN_EXIT_STOPPED;
    }
    return stop;
}

static int finish(struct run *r)
{
    int failed = 0;
    char path[4096];
    if (r->rank == 0) {
        if (snprintf(path, sizeof path, "%s/%s/%s", r->o->dir, KERAS_MODEL_DIR, KERAS_MODEL_NAME) >= (int)sizeof path) {
            fprintf(stderr, "cifar-train: %s: path too long\n", r->o->dir);
            failed = 1;
        } else if ((failed = save_model(path, "the final model", &r->core, r->host_params, r->host_acc, &r->state)) == 0)
            printf("Saved trained model at %s \n", path);
        fflush(stdout);
    }
    int32_t v = failed;
    if (r->size > 1 && coll_broadcast(&v, 1, COLL_INT32, 0) != COLL_OK) {
        fprintf(stderr, "cifar-train: broadcast failed: %s\n", coll_last_error());
        return -1;
    }
    if (v != 0)
        return v == TRAIN_EXIT_NONFINITE ? v : -1;
    struct progress bar;
    if (r->rank == 0)
        progress_start(&bar, stdout, (int)r->test.n);
    double loss, acc;
    if (evaluate_set(&r->core.model, &r->batches, &r->test, r->o->batch, &loss, &acc,
                     r->rank == 0 ? &bar : NULL) != 0)
        return -1;
    if (r->rank == 0) {
        progress_update(&bar, (int)r->test.n, NULL, 1);
        printf("Test loss: %.8g\nTest accuracy: %.8g\n", loss, acc);
        fflush(stdout);
    }
    return 0;
}

static void run_free(struct run *r)
{
    batch_source_destroy(&r->batches);
    step_core_destroy(&r->core);
    cifar_free(&r->train);
    cifar_free(&r->test);
    free(r->host_params);
    free(r->host_acc);
    free(r->labels);
    free(r->order);
    free(r->aug);
    if (r->json)
        fclose(r->json);
    if (r->watching)
        watch_close(&r->watch);
    if (r->export.steps)
        step_export_close(&r->export);
}

static int setup(struct run *r, const struct train_options *o)
{
    memset(r, 0, sizeof *r);
    r->o = o;
    r->rank = coll_rank();
    r->size = coll_size();
    if (o->batch <= 0) {
        if (r->rank == 0)
            fprintf(stderr, "cifar-train: --batch-size must be positive\n");
        return -1;
    }
    const int cpus = cpus_available();
    r->threads = o->threads > 0 ? o->threads : cpus;
    if (r->threads > cpus) {
        fprintf(stderr, "cifar-train: warning: --threads %d is more than the %d CPU%s this process may run on "
                        "(sched_getaffinity): using %d\n", r->threads, cpus, cpus == 1 ? "" : "s", cpus);
        r->threads = cpus;
    }
    o->kernels->set_threads(r->threads);
    r->host_params = calloc(MODEL_NPARAMS, sizeof(float));
    r->host_acc = calloc(MODEL_NPARAMS, sizeof(float));
    r->labels = malloc((size_t)o->batch);
    r->aug = malloc((size_t)o->batch * sizeof *r->aug);
    const int no_host = !r->host_params || !r->host_acc || !r->labels || !r->aug;
    /* Every rank creates the step core, whatever its own allocations gave: with several ranks on the CPU
     * it is collective (coll_host_alloc), and a rank that skipped it would leave the others waiting. */
    const int no_core = step_core_create(&r->core, o->kernels, o->batch, 1e-4, r->size) != 0;
    if (no_host || no_core || batch_source_create(&r->batches, &r->core.model) != 0) {
        fprintf(stderr, "cifar-train: out of memory (%s buffers for batch %d)\n", o->kernels->name, o->batch);
        return -1;
    }
    step_core_set_graphs(&r->core, o->graphs);
    r->vote.m = &r->core.model;
    r->core.vote = cast_stop_vote;
    r->core.vote_ctx = &r->vote;
    return 0;
}

/* Rank 0 makes --dir's saved_models and --checkpoint-dir and proves them writable (prepare_dir); every rank
 * learns the outcome. */
static int prepare_outputs(const struct run *r)
{
    int failed = 0;
    if (r->rank == 0) {
        char models[4096];
        snprintf(models, sizeof models, "%s/%s", r->o->dir, KERAS_MODEL_DIR);
        failed = prepare_dir("--dir", models) != 0 || prepare_dir("--checkpoint-dir", r->o->checkpoint_dir) != 0;
        fflush(stdout);
    }
    return any_failed(failed) ? -1 : 0;
}

int train_run(const struct train_options *o)
{
    struct run r;
    int rc = 1;
    /* A rank with another recipe is refused before anything is written; the output directories are made
     * and proved writable before the first epoch (and before a resume looks for checkpoints there). */
    if (setup(&r, o) != 0 || load_data(&r) != 0 || same_recipe(&r) != 0 || prepare_outputs(&r) != 0 ||
        initial_state(&r) != 0)
        goto out;
    r.epochs = o->epochs > 0 ? o->epochs : (100 + r.size - 1) / r.size;
    r.order = malloc(r.train.n * sizeof *r.order);
    if (!r.order) {
        fprintf(stderr, "cifar-train: out of memory\n");
        goto out;
    }
    if (r.rank == 0) {
        if (o->log_json && !(r.json = fopen(o->log_json, "a"))) {
            fprintf(stderr, "cifar-train: %s: cannot open for writing: %s\n", o->log_json, strerror(errno));
            goto out;
        }
        printf("x_train shape: (%zu, 32, 32, 3)\n%zu train samples\n%zu test samples\n", r.train.n, r.train.n,
               r.test.n);
        puts(o->augment ? "Using real-time data augmentation." : "Not using data augmentation.");
        r.watching = watch_open(&r.watch, o->csv, o->tensorboard, r.start_epoch, r.start_epoch || r.start_step) == 0;
        fflush(stdout);
    }
    if (any_failed(r.rank == 0 && !r.watching))
        goto out;
    if (o->dump_steps) {
        if (r.size > 1) {
            fprintf(stderr, "cifar-train: --dump-steps exports a single rank's run (this run has %d)\n", r.size);
            goto out;
        }
        if (step_export_open(&r.export, o->dump_dir, o->dump_steps, o->batch, r.host_params, r.host_acc, r.core.opt.lr,
                             RMS_RHO, RMS_EPSILON, RMS_DECAY, r.core.opt.iterations, r.state.seed, r.train.n) != 0)
            goto out;
    }
    for (int e = r.start_epoch; e < r.epochs; e++) {
        const int ended = run_epoch(&r, e);
        if (ended == 1) { /* the export is complete: the run stops there, saving nothing */
            printf("Exported %d training steps to %s\n", o->dump_steps, o->dump_dir);
            rc = 0;
            goto out;
        }
        if (ended == TRAIN_EXIT_STOPPED || ended == TRAIN_EXIT_NONFINITE) {
            if (ended == TRAIN_EXIT_STOPPED && r.rank == 0)
                printf("Stopped: resume with --resume auto (or the checkpoint named above)\n");
            rc = ended;
            goto out;
        }
        if (ended != 0)
            goto out;
    }
    if (o->dump_steps) {
        fprintf(stderr, "cifar-train: --dump-steps %d: the run has only %d steps\n", o->dump_steps, r.export.written);
        goto out;
    }
    const int fin = finish(&r);
    rc = fin == 0 ? 0 : fin == TRAIN_EXIT_NONFINITE ? fin : 1;
out:
    run_free(&r);
    return rc;
}

int evaluate_run(const char *model_path, const struct train_options *o)
{
    struct run r;
    int rc = 1;
    char dir[4096], err[1024];
    if (setup(&r, o) != 0 || resolve_data(o, dir, sizeof dir) != 0)
        goto out;
    int failed = 0;
    if (cifar_load_test(dir, o->limit_test, &r.test, err, sizeof err) != 0 ||
        keras_load(model_path, r.host_params, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: %s\n", err);
        failed = 1;
    }
    if (any_failed(failed))
        goto out;
    model_set_params(&r.core.model, r.host_params);
    double loss, acc;
    if (evaluate_set(&r.core.model, &r.batches, &r.test, o->batch, &loss, &acc, NULL) != 0)
        goto out;
    if (r.rank == 0)
        printf("Test loss: %.8g\nTest accuracy: %.8g\n", loss, acc);
    rc = 0;
out:
    run_free(&r);
    return rc;
}
