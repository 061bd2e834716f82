/* input_ring: training batches to the device as raw uint8 images through pinned host buffers, two slots
 * deep, so that the copy of batch s runs on a copy stream while the GPU still computes step s - 1, and
 * the augmentation (shift, flip, 1/255) runs on the GPU (input_engine.augment) instead of the host.
 *
 * A slot holds one batch: images (B x CIFAR_IMAGE_BYTES), labels (B) and the augmentation parameters
 * (B x struct augment_params), packed in one pinned host buffer and one device buffer of the same layout,
 * so a batch is one copy. Batch n always uses slot n % INPUT_RING_SLOTS. The order of events per batch:
 *
 *   host: input_ring_begin  -> the slot's host buffer, once the device has consumed what it held before
 *         (fill it)
 *         input_ring_submit -> upload on the copy stream; the slot is in flight
 *   GPU:  input_ring_take   -> the compute stream waits for that upload; the device view of the batch
 *         (augment into the model's input)
 *         input_ring_done   -> marks on the compute stream that the slot's device data is consumed
 *
 * Only input_ring_begin can block the host, and only on work queued two batches earlier. This file holds
 * the bookkeeping alone; the streams and events are the engine's (kernels_cuda.cu), so the logic is tested
 * on the CPU with a fake engine (tests/trainer/test_input_ring.c). Single-threaded. */
#ifndef TRAINER_INPUT_RING_H
#define TRAINER_INPUT_RING_H

#include <stddef.h>
#include <stdint.h>

#include "input/augment.h"
#include "core/input_engine.h" /* struct input_engine, INPUT_RING_SLOTS */
#include "core/kernels.h"

/* One batch as the host fills it or the device reads it (the same layout on both sides). */
struct input_batch {
    uint8_t *images;               /* B x CIFAR_IMAGE_BYTES */
    uint8_t *labels;               /* B */
    struct augment_params *params; /* B */
    int B;
    int augment;                   /* 0: params unused (no augmentation) */
    long number;                   /* batch number since the ring was created */
};

enum input_slot_state { SLOT_FREE, SLOT_FILLING, SLOT_IN_FLIGHT, SLOT_TAKEN, SLOT_CONSUMED };

struct input_ring {
    const struct input_engine *e;
    const struct kernels *k;
    int max_batch;
    size_t bytes; /* of one slot */
    struct {
        void *host, *dev;
        enum input_slot_state state;
        struct input_batch batch; /* host view while filling; B, augment, number while in flight */
    } slot[INPUT_RING_SLOTS];
    long filled, taken; /* batches begun and taken so far */
};

/* Buffers for batches of up to max_batch images: pinned from e, device from k. Returns 0, or -1 when
 * memory runs out (nothing left allocated). */
int input_ring_create(struct input_ring *r, const struct input_engine *e, const struct kernels *k, int max_batch);
void input_ring_destroy(struct input_ring *r); /* waits for the device to consume every slot first */

/* The host view of the next batch (B <= max_batch images), to fill before input_ring_submit. NULL when
 * called out of order (a batch begun and not submitted, or all slots in flight and none taken). */
struct input_batch *input_ring_begin(struct input_ring *r, int B, int augment);
void input_ring_submit(struct input_ring *r);

/* The device view of the oldest submitted batch, with the compute stream ordered after its upload; NULL
 * when nothing is submitted or a taken batch was not yet done. input_ring_done after the last reader of
 * the device data has been queued. */
const struct input_batch *input_ring_take(struct input_ring *r, struct input_batch *dev_view);
void input_ring_done(struct input_ring *r);

/* One training batch through the ring, as the trainer feeds it: gathers images set_images[index[i]] (CIFAR
 * size), labels[i] and params[i] (NULL: no augmentation) into the next slot, submits it, takes it and
 * queues e->augment into the model's input (m->x, m->labels), where model_forward reads it
 * (input/batch_source.h is how the trainer calls it). The host blocks only if the slot's batch of two calls
 * ago is still being read. */
struct model;
int input_ring_feed(struct input_ring *r, const uint8_t *set_images, const uint32_t *index, const uint8_t *labels,
                    int B, const struct augment_params *params, struct model *m);

#endif
