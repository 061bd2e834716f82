/* train: the training run from start to end (train.h): setup, the data, the ranks' recipes compared,
 * the output directories, the initial state, the epochs (epoch.h), the final model and its test. */
#include "run/train.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "io/site_path.h"
#include "run/any_failed.h"
#include "run/epoch.h"
#include "run/evaluate.h"
#include "run/initial_state.h"
#include "run/output_dirs.h"
#include "run/recipe.h"
#include "run/run_state.h"
#include "run/save_model.h"
#include "run/train_data.h"

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

static int finish(struct run *r)
{
    int failed = 0;
    char path[4096];
    if (r->rank == 0) {
        if (snprintf(path, sizeof path, "%s/%s/%s", r->o->dir, KERAS_MODEL_DIR, KERAS_MODEL_NAME) >= (int)sizeof path) {
            fprintf(stderr, "cifar-train: %s: path too long\n", r->o->dir);
            failed = 1;
        } else if ((failed = save_model(path, "the final model", &r->core, r->host_params, r->host_acc, &r->state)) == 0)
            printf("Saved trained model at %s \n", site_path(path, r->saved, sizeof r->saved));
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

int train_run(const struct train_options *o)
{
    struct run r;
    int rc = 1;
    /* A rank with another recipe is refused before anything is written; the output directories are made
     * and proved writable before the first epoch (and before a resume looks for checkpoints there). */
    if (run_setup(&r, o) != 0 || train_data_load(o, &r.train, &r.test) != 0 || same_recipe(&r) != 0 ||
        output_dirs_prepare(o, r.rank) != 0 || run_initial_state(&r) != 0)
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
                printf("Stopped: checkpoint %s; this job, requeued, resumes from it by --resume auto; a new job or "
                       "run continues from it with --resume %s\n", r.saved, r.saved);
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
