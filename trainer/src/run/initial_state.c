/* initial_state: where a run starts (initial_state.h). */
#include "run/initial_state.h"

#include <stdio.h>
#include <string.h>

#include "collective.h"
#include "run/any_failed.h"
#include "run/checkpoint_files.h"

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

int run_initial_state(struct run *r)
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
                r->state.part_loss_sum = st.part_loss_sum;
                r->state.part_correct = st.part_correct;
                r->state.part_seen = st.part_seen;
                r->state.part_seconds = st.part_seconds;
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
