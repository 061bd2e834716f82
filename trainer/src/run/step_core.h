/* step_core: one training step of one rank (forward, backward, the gradients' average over the ranks, the
 * RMSprop update) and the stop votes that ride with the gradients. The run (train.h) drives it epoch by
 * epoch; the MPI and CUDA tests and the benches drive it directly. */
#ifndef TRAINER_STEP_CORE_H
#define TRAINER_STEP_CORE_H

#include <stdint.h>

#include "core/kernels.h"
#include "core/model.h"
#include "core/optimizer.h"
#include "run/graph_plan.h"

/* The tutorial's RMSprop (keras.optimizers.rmsprop(lr=0.0001, decay=1e-6), Keras's rho and epsilon), recorded
 * in every checkpoint and step export. */
#define RMS_RHO 0.9
#define RMS_DECAY 1e-6
#define RMS_EPSILON 1e-7

/* One training step of this rank: forward and backward over the B images in the model's input
 * (model_load, or input/batch_source.h) with dropout masks from dropout_key, gradients averaged over all
 * ranks (when size > 1), RMSprop update. Adds the summed loss and correct count of this rank's batch to
 * the model's sums (model_read_sums), and returns without waiting for a device.
 * With a table that has a graph engine and a single rank (a step that waits for no allreduce), steps of
 * the largest size so far are captured once as a CUDA graph after STEP_GRAPH_WARMUP plain ones and then
 * replayed (graph_plan.h): the host work of a step is then one upload of the step's values
 * (model_set_step) and one graph launch. Returns 0, or -1 when the allreduce failed. */
#define STEP_GRAPH_WARMUP 2
#define STEP_VOTES 4 /* stop_signals.h's: one per stop signal (SIGTERM, SIGINT, SIGUSR1) and a non-finite loss */
struct step_core {
    struct model model;
    struct rmsprop opt;
    int size; /* ranks taking part in gradient averaging */
    struct graph_plan plan;
    struct kernel_graph *graph; /* NULL until captured */
    double wait_sec; /* summed time the step waited for its gradient allreduces after backward (bench-scaling) */
    /* The caller's vote on each step (the run's stop reasons, stop_signals.h), which costs no collective of its own:
     * vote(vote_ctx, votes) writes this rank's STEP_VOTES values, and when step_core_step returns, `votes`
     * holds their average over the ranks (nonzero where any rank's value is). With several ranks it is
     * called once backward has queued the last gradient tensor, and the votes are reduced in the
     * gradients' batch; with one, after the step. vote NULL: zeros. */
    void (*vote)(void *ctx, float *votes);
    void *vote_ctx;
    float votes[STEP_VOTES];
    /* Several ranks: from coll_host_alloc, the votes' slot and, with a host table, before it the gradients,
     * parameters and accumulators (step_core_create says why). */
    float *shared;
    float *vote_slot; /* several ranks: where the votes are reduced, in `shared` */
    /* Several ranks with a host table: the gradients' reductions update the parameters (apply_update),
     * which live in `shared`, rank 0's for every rank of one host. */
    int applies;
};
/* size > 1 makes it collective: the votes' slot, and with a host table the gradients, parameters and
 * accumulators, come from coll_host_alloc, so that ranks on one node average the gradients straight out
 * of each other's memory and each updates its slice of the one copy of the parameters. */
int step_core_create(struct step_core *c, const struct kernels *k, int max_batch, double lr, int size);
/* Graphs on (the default where possible) or off (--no-cuda-graph); drops a captured graph. */
void step_core_set_graphs(struct step_core *c, int on);
void step_core_destroy(struct step_core *c);
int step_core_step(struct step_core *c, int B, uint64_t dropout_key);

#endif
