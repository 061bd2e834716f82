/* epoch: one epoch of a run on one rank (epoch.h). */
#include "run/epoch.h"

#include <stdio.h>

#include "collective.h"
#include "core/rng.h"
#include "io/site_path.h"
#include "run/checkpoint_files.h"
#include "run/draws.h"
#include "run/evaluate.h"
#include "run/json_log.h"
#include "run/progress.h"
#include "run/save_model.h"

static void gather_labels(const struct cifar_set *s, const uint32_t *idx, int n, uint8_t *out)
{
    for (int i = 0; i < n; i++)
        out[i] = s->labels[idx ? idx[i] : (uint32_t)i];
}

/* Rank 0 writes checkpoint-{epoch + 1}.h5 (step 0: the epoch is done) or checkpoint-{epoch + 1}-step-{step}.h5
 * (a stop after `step` steps of it), and all ranks agree on the outcome: 0, -1, or TRAIN_EXIT_NONFINITE. */
static int save_checkpoint(struct run *r, int epoch, int step)
{
    int rc = 0;
    r->state.epoch = step ? epoch : epoch + 1;
    r->state.step = step;
    r->state.iterations = r->core.opt.iterations;
    if (!step) /* a whole epoch: no running sums carry over (after_step sets them for a stop) */
        r->state.part_loss_sum = r->state.part_seconds = 0, r->state.part_correct = r->state.part_seen = 0;
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
        if (rc == 0)
            site_path(path, r->saved, sizeof r->saved);
        if (rc == 0 && step)
            printf("\nSaved checkpoint at %s\n", r->saved);
        fflush(stdout);
    }
    int32_t v[2] = {rc == -1, rc == TRAIN_EXIT_NONFINITE};
    if (r->size > 1 && coll_allreduce(v, v, 2, COLL_INT32, COLL_SUM) != COLL_OK) {
        fprintf(stderr, "cifar-train: allreduce failed: %s\n", coll_last_error());
        return -1;
    }
    return v[0] ? -1 : v[1] ? TRAIN_EXIT_NONFINITE : 0;
}

/* The running sums of an epoch's steps: a resumed epoch starts from the checkpoint's (keras_h5.h), so that
 * its row covers every step, and a stop saves them. */
struct epoch_sums {
    double loss0;  /* the sums before this run's first step of the epoch */
    int correct0;
    double seconds0;
    double t0;     /* this run's start of the epoch (progress_now) */
};

/* The model's sums of this run's steps (model_read_sums) plus those before them. */
static void read_sums(struct run *r, const struct epoch_sums *e, double *loss_sum, int *correct)
{
    model_read_sums(&r->core.model, loss_sum, correct);
    *loss_sum += e->loss0;
    *correct += e->correct0;
}

/* After step `s` (0-based) of `epoch`, `seen` images into it: the stop the ranks voted for in it
 * (stop_vote_cast), if any. Returns 0 to go on, or what run_epoch returns. */
static int after_step(struct run *r, int epoch, int s, int steps, const struct epoch_sums *e, size_t seen)
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
        printf("\n%s: stopping after epoch %d, step %d/%d\n", stop_voted_signal(r->core.votes), epoch + 1, s + 1,
               steps);
        fflush(stdout);
    }
    int correct;
    read_sums(r, e, &r->state.part_loss_sum, &correct);
    r->state.part_correct = correct;
    r->state.part_seen = (int64_t)seen;
    r->state.part_seconds = e->seconds0 + progress_now() - e->t0;
    const int rc = save_checkpoint(r, epoch, s + 1);
    return rc ? rc : TRAIN_EXIT_STOPPED;
}

int run_epoch(struct run *r, int epoch)
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
    struct epoch_sums sums = {0.0, 0, 0.0, t0};
    if (first_step > 0) { /* resumed mid-epoch: the steps before it count in its row */
        sums.loss0 = loss_sum = r->state.part_loss_sum;
        sums.correct0 = correct = (int)r->state.part_correct;
        sums.seconds0 = r->state.part_seconds;
        seen = (size_t)r->state.part_seen;
    }
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
            read_sums(r, &sums, &loss_sum, &correct);
            const int done = step_export_add(&r->export, &r->core.model, epoch, s, B, idx, o->augment ? r->aug : NULL,
                                             dropout_key, lr_t, loss_sum - before);
            if (done != 0)
                return done;
        }
        const int log_step = o->log_every > 0 && (s + 1) % o->log_every == 0 && s + 1 < steps;
        if (r->rank == 0 && (log_step || progress_due(&bar, s + 1))) {
            /* Reading the sums waits for the step: only when they are shown. */
            read_sums(r, &sums, &loss_sum, &correct);
            char vals[128] = "";
            progress_value(vals, sizeof vals, "loss", loss_sum / seen);
            progress_value(vals, sizeof vals, "acc", (double)correct / seen);
            progress_update(&bar, s + 1, vals, 0);
            if (log_step) {
                double dt = sums.seconds0 + progress_now() - t0;
                json_log_line(r->json, "step", epoch + 1, s + 1, steps, loss_sum / seen, (double)correct / seen, NULL,
                          seen * r->size / dt, rmsprop_lr_t(&r->core.opt), dt, NULL);
            }
        }
        const int stop = after_step(r, epoch, s, steps, &sums, seen);
        if (stop != 0)
            return stop;
    }
    read_sums(r, &sums, &loss_sum, &correct); /* before validation reuses them */
    const double train_time = sums.seconds0 + progress_now() - t0;
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
        json_log_line(r->json, "epoch", epoch + 1, steps, steps, loss_sum / shown, (double)correct / shown, val,
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
    const int stop = stop_agree_signal(&signal); /* a signal during validation or the save: stop here */
    if (stop > 0) {
        if (r->rank == 0)
            printf("%s: stopping after epoch %d (checkpoint-%d.h5)\n", signal, epoch + 1, epoch + 1);
        return TRAIN_EXIT_STOPPED;
    }
    return stop;
}
