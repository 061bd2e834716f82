/* run_state: the state of one training (or evaluation) run on one rank, which the files of the run share:
 * train.c (the run from start to end), initial_state.c, epoch.c and evaluate.c. */
#ifndef TRAINER_RUN_STATE_H
#define TRAINER_RUN_STATE_H

#include <stdint.h>
#include <stdio.h>

#include "input/augment.h"
#include "input/batch_source.h"
#include "io/cifar_data.h"
#include "io/keras_h5.h"
#include "io/step_export.h"
#include "run/step_core.h"
#include "run/stop_signals.h"
#include "run/train.h"
#include "run/watch.h"

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
    struct stop_vote vote;       /* this rank's, cast by core's steps (stop_vote_cast) */
    struct keras_train_state state;
    FILE *json;
    struct watch watch; /* rank 0's CSV, TensorBoard and PNG (watching: opened) */
    int watching;
    struct step_export export; /* --dump-steps; export.steps is 0 without it */
    char saved[4096];          /* rank 0's last checkpoint, as its site path (io/site_path.h) */
};

/* What every run needs before its data: the thread count, host buffers, the step core (collective with
 * several ranks: every rank calls it) and the batch source, with the stop votes wired to the core.
 * Returns 0, or -1 after saying why; run_free() either way. */
int run_setup(struct run *r, const struct train_options *o);
void run_free(struct run *r);

#endif
