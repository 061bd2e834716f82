/* epoch: one epoch of a training run on one rank: the sample order, each step's batch (augmentation drawn
 * on the host), the step, the progress bar and --log-json step lines, the stop the ranks voted for after a
 * step (a checkpoint-{E}-step-{S}.h5), then validation, the epoch's line and checkpoint-{E}.h5. */
#ifndef TRAINER_EPOCH_H
#define TRAINER_EPOCH_H

#include "run/run_state.h"

/* Collective. `epoch` is 0-based. Returns 0 to go on; TRAIN_EXIT_STOPPED (a signal: the checkpoint is
 * written), TRAIN_EXIT_NONFINITE, 1 when --dump-steps has exported its steps, or -1 after an error. */
int run_epoch(struct run *r, int epoch);

#endif
