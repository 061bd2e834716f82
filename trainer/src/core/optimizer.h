/* optimizer: RMSprop with Keras 2.x semantics (keras/optimizers.py, RMSprop.get_updates):
 *   lr_t = lr / (1 + decay * iterations)         (float32, iterations before this update)
 *   a    = rho * a + (1 - rho) * g^2
 *   p   -= lr_t * g / (sqrt(a) + epsilon)
 *   iterations += 1
 * The accumulators use the parameter layout (one float per parameter, one device allocation). */
#ifndef TRAINER_OPTIMIZER_H
#define TRAINER_OPTIMIZER_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/kernels.h"

struct rmsprop {
    double lr, rho, decay, epsilon; /* as configured; applied in float32 like Keras's variables */
    uint64_t iterations;
    float *acc; /* device, n floats */
    int acc_lent; /* acc is the caller's (rmsprop_create), not released here */
    size_t n;
};

/* Accumulators start at zero: the table's, or acc when not NULL (n zeroed floats in the table's memory,
 * which the caller frees after rmsprop_destroy). Returns 0, or -1 when memory runs out. */
int rmsprop_create(struct rmsprop *o, const struct kernels *k, size_t n, double lr, double rho, double decay,
                   double epsilon, float *acc);
void rmsprop_destroy(struct rmsprop *o, const struct kernels *k);

/* The learning rate the next update applies. */
float rmsprop_lr_t(const struct rmsprop *o);

/* Queues one update of params with grads (table memory) at the learning rate *lr_t, read when the update
 * runs (table memory: the model's step->lr_t, holding rmsprop_lr_t(o)); leaves o->iterations alone, so
 * that a replayed update is counted by its caller. */
void rmsprop_queue(const struct rmsprop *o, const struct kernels *k, float *params, const float *grads,
                   const float *lr_t);

/* One parameter's update, the formula above: the kernels and rmsprop_apply share it, so they agree to the
 * bit. */
static inline void rmsprop_update_one(float *p, float *a, float g, float lr, float rho, float one_minus_rho,
                                      float eps)
{
    const float ai = rho * *a + one_minus_rho * g * g;
    *a = ai;
    *p -= lr * g / (sqrtf(ai) + eps);
}

/* Host memory, on the calling thread alone (libcollective's progress thread: coll_allreduce_apply_async):
 * updates the n parameters p and their accumulators a from their reduced gradients g at learning rate
 * lr_t. Leaves o->iterations alone, like rmsprop_queue. */
void rmsprop_apply(const struct rmsprop *o, float *p, float *a, const float *g, size_t n, float lr_t);

/* rmsprop_queue, then o->iterations += 1. */
void rmsprop_step(struct rmsprop *o, const struct kernels *k, float *params, const float *grads, const float *lr_t);

#endif
