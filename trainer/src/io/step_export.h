/* step_export: `cifar-train --dump-steps N --dump-dir DIR`, a debug export of the first N training steps of a
 * run, so that an independent implementation (tests/trainer/test_lockstep.py) can train the same steps
 * from the same inputs and compare, separating the arithmetic from the randomness.
 *
 * Everything is exported as it reached the model, read back from the model's own buffers (so a device
 * table's batches, augmented on the GPU, are what is written):
 *   meta.json            batch, number of steps, parameters, RMSprop settings, the starting iteration
 *                        count, the seed, the training set size, the stride of params_sampled, and the
 *                        dropout layers (name, rate, units per image)
 *   init_params.npy      float32 (P,)   weights before the first exported step
 *   init_acc.npy         float32 (P,)   RMSprop accumulators before it
 *   step.npy             int32 (N, 3)   epoch (0-based), step within the epoch, real batch size B
 *   order.npy            int32 (N, batch)          training-set index of each image, -1 past B
 *   aug.npy              float32 (N, batch, 3)     shift rows, shift columns, flip (0/1)
 *   x.npy                float32 (N, batch, 32, 32, 3)  the network input, zero past B
 *   labels.npy           uint8 (N, batch)
 *   mask_<layer>.npy     uint8 (N, batch, units)   1 where the dropout layer kept the unit (NHWC order)
 *   lr_t.npy             float32 (N,)   the learning rate the update used
 *   loss.npy             float64 (N,)   the batch's mean loss
 *   params_sampled.npy   float32 (N, ceil(P / stride))  weights after each step, every stride-th one
 *   state.npy            float32 (K, 2, P)  weights and accumulators before the steps in state_steps.npy:
 *   state_steps.npy      int32 (K,)         the first two of every STEP_EXPORT_STATE_EVERY steps, every
 *                                            epoch's first step and every partial batch (so that a step
 *                                            from a kept state often ends at another: all weights compared)
 * Why full states: float32 runs (ours, PyTorch's) drift apart from a float64 one within ~10 steps with no
 * error in either (tests/trainer/test_lockstep.py says why), so a reference restarts from these states and
 * compares the arithmetic of single steps.
 * Files are NumPy .npy (version 1.0, little-endian); each per-step file's first dimension is the number of
 * steps actually exported, fixed when the export is closed. */
#ifndef TRAINER_STEP_EXPORT_H
#define TRAINER_STEP_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/image.h" /* struct augment_params */
#include "core/model.h"

/* Every STEP_EXPORT_STRIDE-th weight is exported after each step. */
#define STEP_EXPORT_STRIDE 31
#define STEP_EXPORT_STATE_EVERY 50

struct npy_file {
    FILE *f;
    const char *descr;   /* "<f4", "<i4", "|u1", "<f8" */
    size_t elem;         /* bytes per element */
    size_t row[4];       /* the shape after the first dimension */
    int row_rank;
    size_t rows;         /* written so far */
};

struct step_export {
    char dir[4096];
    int steps, batch, written;
    struct npy_file step, order, aug, x, labels, lr_t, loss, sampled, state, state_steps;
    struct npy_file mask[MODEL_MAX_DROPOUT];
    float *params, *xbuf;  /* host copies: weights (P), one batch (batch x 3072) */
    uint8_t *bytes;        /* one row of labels or of a mask */
};

/* Creates DIR (it must not exist: an export never mixes with an older one) and writes meta.json and the
 * initial state. Returns 0, or -1 with the reason printed. */
int step_export_open(struct step_export *e, const char *dir, int steps, int batch, const float *params,
                     const float *acc, double lr, double rho, double epsilon, double decay, uint64_t iterations,
                     uint64_t seed, size_t train_images);

/* Called before each step_core_step (step: within the epoch, B: its batch size): exports the full state
 * when the step is one that state.npy keeps. Returns 0, or -1 on a write error (printed). */
int step_export_state(struct step_export *e, const struct model *m, int step, int B, const float *acc_device);

/* Appends one step, called after step_core_step: B images of the training set at index idx with
 * augmentation parameters aug (NULL without augmentation), the step's dropout key (model_set_step), the
 * learning rate it used, the batch's summed loss, and the model whose input buffer, labels and weights
 * are read back. Returns 1 when this was the N-th step (the export is then complete and closed), 0 when
 * more are wanted, -1 on a write error (printed). */
int step_export_add(struct step_export *e, const struct model *m, int epoch, int step, int B, const uint32_t *idx,
                    const struct augment_params *aug, uint64_t dropout_key, float lr_t, double loss_sum);

/* Fixes the shapes of the per-step files and closes everything (also after an error). Returns 0, or -1
 * when a write failed (printed). */
int step_export_close(struct step_export *e);

#endif
