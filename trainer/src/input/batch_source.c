#include "input/batch_source.h"

#include <stdlib.h>
#include <string.h>

#include "io/cifar_data.h"

int batch_source_create(struct batch_source *s, struct model *m)
{
    const struct kernels *k = m->k;
    memset(s, 0, sizeof *s);
    s->m = m;
    if (k->input)
        return input_ring_create(&s->ring, k->input, k, m->max_batch);
    s->x = malloc((size_t)m->max_batch * CIFAR_IMAGE_BYTES * sizeof(float));
    return s->x ? 0 : -1;
}

void batch_source_destroy(struct batch_source *s)
{
    if (s->ring.e)
        input_ring_destroy(&s->ring);
    free(s->x);
    memset(s, 0, sizeof *s);
}

int batch_source_load(struct batch_source *s, const uint8_t *set_images, const uint32_t *index,
                      const uint8_t *labels, int B, const struct augment_params *params)
{
    if (s->ring.e)
        return input_ring_feed(&s->ring, set_images, index, labels, B, params, s->m);
    if (B > s->m->max_batch)
        return -1;
    if (params)
        augment_batch(set_images, index, (size_t)B, params, s->x);
    else
        augment_convert_batch(set_images, index, (size_t)B, s->x);
    model_load(s->m, s->x, labels, B);
    return 0;
}
