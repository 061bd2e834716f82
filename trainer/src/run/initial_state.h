/* initial_state: where a run starts: fresh weights from the seed, or a checkpoint (--resume FILE, or
 * --resume auto: the newest in --checkpoint-dir), read on rank 0 and broadcast to every rank, with the
 * training position (epoch, step, iterations) and the best epoch so far. */
#ifndef TRAINER_INITIAL_STATE_H
#define TRAINER_INITIAL_STATE_H

#include "run/run_state.h"

/* Collective. Fills r->state, the step core's weights, accumulators, learning rate and iterations, and
 * r->start_epoch / r->start_step; warns (rank 0) where the checkpoint's writer ran differently in a way
 * that changes the model. Returns 0, or -1 on every rank after saying why. */
int run_initial_state(struct run *r);

#endif
