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

/* What an epoch reports: its progress line, its --log-json lines and its watch row. */
struct epoch_figures {
    double loss_sum;              /* the summed loss of the epoch's steps so far (read_sums) */
    int correct;                  /* their correctly classified images */
    size_t seen;                  /* their images on this rank */
    struct json_epoch_times times; /* over this run's steps of the epoch */
    double val_loss, val_acc;     /* validation, after the last step */
};

/* One step's batch. */
struct step_batch {
    int s;               /* the step within the epoch, 0-based */
    int B;               /* its images */
    const uint32_t *idx; /* their training-set indices */
    uint64_t dropout_key;
    float lr_t;          /* the learning rate the step uses */
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

/* --dump-steps (io/step_export.h), before step_core_step: the full state when the step is one the export
 * keeps. Returns 0, or -1 on a write error. */
static int dump_before_step(struct run *r, const struct step_batch *b)
{
    if (!r->export.steps)
        return 0;
    return step_export_state(&r->export, &r->core.model, b->s, b->B, r->core.opt.acc) != 0 ? -1 : 0;
}

/* --dump-steps, after step_core_step: the step as the model saw it (the sums are read for its loss). Returns
 * 0 to go on, 1 once the N-th step is out (the run ends), or -1 on a write error. */
static int dump_after_step(struct run *r, int epoch, const struct step_batch *b, const struct epoch_sums *sums,
                           struct epoch_figures *fig)
{
    if (!r->export.steps)
        return 0;
    const double before = fig->loss_sum;
    read_sums(r, sums, &fig->loss_sum, &fig->correct);
    return step_export_add(&r->export, &r->core.model, epoch, b->s, b->B, b->idx, r->o->augment ? r->aug : NULL,
                           b->dropout_key, b->lr_t, fig->loss_sum - before);
}

/* Rank 0, after step s of `steps`: the progress bar when due, and a --log-json step line every --log-every
 * steps (reading the sums waits for the step: only when they are shown). */
static void show_step(struct run *r, int epoch, int s, int steps, struct progress *bar, const struct epoch_sums *sums,
                      struct epoch_figures *fig)
{
    const struct train_options *o = r->o;
    const int log_step = o->log_every > 0 && (s + 1) % o->log_every == 0 && s + 1 < steps;
    if (r->rank != 0 || !(log_step || progress_due(bar, s + 1)))
        return;
    read_sums(r, sums, &fig->loss_sum, &fig->correct);
    char vals[128] = "";
    progress_value(vals, sizeof vals, "loss", fig->loss_sum / fig->seen);
    progress_value(vals, sizeof vals, "acc", (double)fig->correct / fig->seen);
    progress_update(bar, s + 1, vals, 0);
    if (log_step) {
        double dt = sums->seconds0 + progress_now() - sums->t0;
        json_log_line(r->json, &(struct json_line){
                                   .type = "step", .epoch = epoch + 1, .step = s + 1, .steps = steps,
                                   .loss = fig->loss_sum / fig->seen, .acc = (double)fig->correct / fig->seen,
                                   .images_per_sec = fig->seen * r->size / dt, .lr = rmsprop_lr_t(&r->core.opt),
                                   .seconds = dt});
    }
}

/* Step s of the epoch: its batch, the step, the export, the progress; then the stop voted in it. Returns 0
 * to go on, or what run_epoch returns. */
static int run_step(struct run *r, int epoch, int s, int steps, size_t per_rank, struct progress *bar,
                    const struct epoch_sums *sums, struct epoch_figures *fig)
{
    const struct train_options *o = r->o;
    const uint64_t seed = r->state.seed;
    struct step_batch b = {.s = s, .idx = r->order + (size_t)s * o->batch};
    b.B = (int)(per_rank - (size_t)s * o->batch < (size_t)o->batch ? per_rank - (size_t)s * o->batch
                                                                   : (size_t)o->batch);
    if (o->augment)
        draw_augment(rng_key(seed, epoch, s, r->rank, RNG_AUGMENT), b.B, CIFAR_H, CIFAR_W, r->aug);
    gather_labels(&r->train, b.idx, b.B, r->labels);
    if (batch_source_load(&r->batches, r->train.images, b.idx, r->labels, b.B, o->augment ? r->aug : NULL) != 0)
        return -1;
    b.dropout_key = rng_key(seed, epoch, s, r->rank, RNG_DROPOUT);
    b.lr_t = rmsprop_lr_t(&r->core.opt);
    if (dump_before_step(r, &b) != 0)
        return -1;
    const int loss_every = r->core.model.k->device ? DEVICE_LOSS_EVERY : 1;
    r->vote.check = (s + 1) % loss_every == 0 || s + 1 == steps;
    const double step_t0 = progress_now();
    if (step_core_step(&r->core, b.B, b.dropout_key) != 0)
        return -1;
    fig->times.step_seconds += progress_now() - step_t0;
    fig->seen += b.B;
    const int dumped = dump_after_step(r, epoch, &b, sums, fig);
    if (dumped != 0)
        return dumped;
    show_step(r, epoch, s, steps, bar, sums, fig);
    return after_step(r, epoch, s, steps, sums, fig->seen);
}

/* After the last step: validation, the epoch's line and row, the best epoch, checkpoint-{E}.h5, and a stop
 * signalled meanwhile. Returns what run_epoch returns. */
static int end_epoch(struct run *r, int epoch, int steps, struct progress *bar, const struct epoch_sums *sums,
                     struct epoch_figures *fig)
{
    read_sums(r, sums, &fig->loss_sum, &fig->correct); /* before validation reuses them */
    const double train_time = sums->seconds0 + progress_now() - sums->t0;
    fig->times.wait_seconds += r->core.wait_sec;
    fig->times.progress_cpu_seconds += coll_thread_cpu_seconds();
    if (evaluate_set(&r->core.model, &r->batches, &r->test, r->o->batch, &fig->val_loss, &fig->val_acc, NULL) != 0)
        return -1;
    if (r->rank == 0) {
        const double shown = fig->seen ? (double)fig->seen : 1.0; /* none when resumed after the last step */
        const double loss = fig->loss_sum / shown, acc = (double)fig->correct / shown;
        const double ips = fig->seen * r->size / train_time;
        char vals[256] = "";
        progress_value(vals, sizeof vals, "loss", loss);
        progress_value(vals, sizeof vals, "acc", acc);
        progress_value(vals, sizeof vals, "val_loss", fig->val_loss);
        progress_value(vals, sizeof vals, "val_acc", fig->val_acc);
        progress_update(bar, steps, vals, 1);
        json_log_line(r->json, &(struct json_line){
                                   .type = "epoch", .epoch = epoch + 1, .step = steps, .steps = steps, .loss = loss,
                                   .acc = acc, .validated = 1, .val_loss = fig->val_loss, .val_acc = fig->val_acc,
                                   .images_per_sec = ips, .lr = rmsprop_lr_t(&r->core.opt), .seconds = train_time,
                                   .times = &fig->times});
        if (r->watching) /* before the checkpoint: a resume from the one before drops this row again */
            watch_epoch(&r->watch, &(struct watch_epoch){epoch, loss, acc, fig->val_loss, fig->val_acc, ips,
                                                         rmsprop_lr_t(&r->core.opt)});
    }
    if (r->state.best_epoch == 0 || fig->val_acc > r->state.best_val_acc) {
        r->state.best_epoch = epoch + 1;
        r->state.best_val_acc = fig->val_acc;
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

int run_epoch(struct run *r, int epoch)
{
    const struct train_options *o = r->o;
    const size_t per_rank = o->shard ? r->train.n / r->size : r->train.n;
    const size_t first = o->shard ? per_rank * r->rank : 0;
    const int steps = (int)((per_rank + o->batch - 1) / o->batch);
    struct progress bar;
    if (r->rank == 0) {
        printf("Epoch %d/%d\n", epoch + 1, r->epochs);
        fflush(stdout);
        progress_start(&bar, stdout, steps);
    }
    draw_epoch_order(r->order, per_rank, first, rng_key(r->state.seed, epoch, 0, r->rank, RNG_SHUFFLE));
    struct epoch_figures fig = {
        .times = {.wait_seconds = -r->core.wait_sec, .progress_cpu_seconds = -coll_thread_cpu_seconds()}};
    struct epoch_sums sums = {0.0, 0, 0.0, progress_now()};
    const int first_step = epoch == r->start_epoch ? r->start_step : 0;
    if (first_step > 0) { /* resumed mid-epoch: the steps before it count in its row */
        sums.loss0 = fig.loss_sum = r->state.part_loss_sum;
        sums.correct0 = fig.correct = (int)r->state.part_correct;
        sums.seconds0 = r->state.part_seconds;
        fig.seen = (size_t)r->state.part_seen;
    }
    model_clear_sums(&r->core.model);
    for (int s = first_step; s < steps; s++) {
        const int rc = run_step(r, epoch, s, steps, per_rank, &bar, &sums, &fig);
        if (rc != 0)
            return rc;
    }
    return end_epoch(r, epoch, steps, &bar, &sums, &fig);
}
