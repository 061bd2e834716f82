/* batch_source: the one way a batch reaches the model's input (m->x and m->labels, where model_forward
 * reads it), whatever the kernel table:
 *  - a table with an input engine (kernels.h: input; the GPU): the raw images go through the input ring
 *    (input_ring.h) and are augmented or converted on the device;
 *  - any other (the CPU): augmented or converted on the host (augment.h) into a staging buffer, then
 *    loaded with model_load.
 * Both give the same batch from the same draws (augment.c is the reference of the device's augmentation),
 * so the run loop neither knows nor branches on which one it has. */
#ifndef TRAINER_BATCH_SOURCE_H
#define TRAINER_BATCH_SOURCE_H

#include <stdint.h>

#include "core/model.h"
#include "input/augment.h"
#include "input/input_ring.h"

struct batch_source {
    struct model *m;
    struct input_ring ring; /* the device path when ring.e is set */
    float *x;               /* the host path's staging buffer: max_batch images as floats */
};

/* For batches of up to m->max_batch images into m. Returns 0, or -1 when memory runs out (nothing left
 * allocated). */
int batch_source_create(struct batch_source *s, struct model *m);
void batch_source_destroy(struct batch_source *s); /* waits for the device to read every batch first */

/* B <= m->max_batch images set_images[index[i]] (index NULL: the first B) with labels[i], augmented with
 * params[i] (NULL: only converted to floats in [0, 1]), into the model's input. Returns 0, or -1 when B
 * is too large. The device path returns without waiting for the device (input_ring_feed). */
int batch_source_load(struct batch_source *s, const uint8_t *set_images, const uint32_t *index,
                      const uint8_t *labels, int B, const struct augment_params *params);

#endif
