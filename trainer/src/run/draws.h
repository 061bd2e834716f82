/* draws: the random draws of a training run that are not inside a kernel, in one place so that the run
 * (epoch.c) and the statistical test of the random components (tests/trainer/test_random.sh) use the same
 * code. Every draw is a pure function of a counter-based stream key (rng.h), so resuming stays exact.
 *
 *   draw_epoch_order: the sample order of one epoch on one rank, a Fisher-Yates shuffle of
 *                     first .. first + n - 1 (as Keras's NumpyArrayIterator: np.random.permutation each epoch)
 *   draw_augment:     Keras ImageDataGenerator's per-image draws for one batch: image i gets three uniforms
 *                     (rows shift, columns shift, flip) numbers 3i, 3i+1, 3i+2 of the stream, mapped by
 *                     augment_params_from_uniform() */
#ifndef TRAINER_DRAWS_H
#define TRAINER_DRAWS_H

#include <stddef.h>
#include <stdint.h>

#include "input/augment.h"

void draw_epoch_order(uint32_t *order, size_t n, size_t first, uint64_t key);

void draw_augment(uint64_t key, int n, int h, int w, struct augment_params *out);

#endif
