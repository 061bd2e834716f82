/* optimizer: RMSprop with Keras 2.x semantics (keras/optimizers.py, RMSprop.get_updates):
 *   lr_t = lr / (1 + decay * iterations)         (float32, iterations before this update)
 *   a    = rho * a + (1 - rho) * g^2
 *   p   -= lr_t * g / (sqrt(a) + epsilon)
 *   iterations += 1
 * The accumulators use the parameter layout (one float per parameter, one device allocation). */
#ifndef TRAINER_OPTIMIZER_H
#define TRAINER_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/kernels.h"

struct rmsprop {
    double lr, rho, decay, epsilon; /* as configured; applied in float32 like Keras's variables */
    uint64_t iterations;
    float *acc; /* device, n floats */
    size_t n;
};

/* Accumulators start at zero. Returns 0, or -1 when memory runs out. */
int rmsprop_create(struct rmsprop *o, const struct kernels *k, size_t n, double lr, double rho, double decay,
                   double epsilon);
void rmsprop_destroy(struct rmsprop *o, const struct kernels *k);

/* The learning rate the next update applies. */
float rmsprop_lr_t(const struct rmsprop *o);

/* Queues one update of params with grads (table memory) at the learning rate *lr_t, read when the update
 * runs (table memory: the model's step->lr_t, holding rmsprop_lr_t(o)); leaves o->iterations alone, so
 * that a replayed update is counted by its caller. */
void rmsprop_queue(const struct rmsprop *o, const struct kernels *k, float *params, const float *grads,
                   const float *lr_t);

/* rmsprop_queue, then o->iterations += 1. */
void rmsprop_step(struct rmsprop *o, const struct kernels *k, float *params, const float *grads, const float *lr_t);

#endif
