/* input_engine: what a device offers the input ring (input/input_ring.h) to feed it raw batches and augment
 * them there; a kernel table points at its engine (kernels.h: struct kernels.input). It lives here, below
 * both, so that a device's table (cuda/) implements it without reaching up into input/. */
#ifndef TRAINER_INPUT_ENGINE_H
#define TRAINER_INPUT_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/image.h"

#define INPUT_RING_SLOTS 2

/* What a device offers for the ring (kernels.h: struct kernels.input). Slots are 0..INPUT_RING_SLOTS-1: the
 * ring's depth, here because a device sizes its per-slot events by it. */
struct input_engine {
    void *(*host_alloc)(size_t bytes); /* pinned host memory; NULL when out of memory */
    void (*host_free)(void *p);
    /* Queue host -> device of `bytes` on the copy stream, then record that slot's arrival. The host buffer
     * must stay untouched until the slot is consumed (input_ring guarantees it). */
    void (*upload)(int slot, void *dev, const void *host, size_t bytes);
    void (*wait_arrived)(int slot);  /* the compute stream waits for the slot's last upload */
    void (*mark_consumed)(int slot); /* record on the compute stream: the slot's device data was read */
    void (*wait_consumed)(int slot); /* the host waits for the slot's last mark (at once if none) */
    /* On the compute stream: x[b] = augment_image(images[b], params[b]) (augment.h), or images[b] / 255
     * when params is NULL; labels copied. All pointers are device memory; B images of CIFAR size. */
    void (*augment)(const uint8_t *images, const struct augment_params *params, const uint8_t *labels_in, int B,
                    float *x, uint8_t *labels);
};

#endif
