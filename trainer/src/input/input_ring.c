/* Double-buffered device input: see input_ring.h. */
#include "input/input_ring.h"

#include <string.h>

#include "io/cifar_data.h"
#include "core/model.h"

/* Offsets inside a slot: images, then labels, then parameters (aligned for their floats). */
static size_t labels_at(int max_batch) { return (size_t)max_batch * CIFAR_IMAGE_BYTES; }
static size_t params_at(int max_batch)
{
    const size_t a = _Alignof(struct augment_params);
    return (labels_at(max_batch) + (size_t)max_batch + a - 1) / a * a;
}

static void view(struct input_batch *b, void *base, int max_batch)
{
    b->images = base;
    b->labels = (uint8_t *)base + labels_at(max_batch);
    b->params = (struct augment_params *)((uint8_t *)base + params_at(max_batch));
}

int input_ring_create(struct input_ring *r, const struct input_engine *e, const struct kernels *k, int max_batch)
{
    memset(r, 0, sizeof *r);
    r->e = e;
    r->k = k;
    r->max_batch = max_batch;
    r->bytes = params_at(max_batch) + (size_t)max_batch * sizeof(struct augment_params);
    for (int i = 0; i < INPUT_RING_SLOTS; i++) {
        if (!(r->slot[i].host = e->host_alloc(r->bytes)) || !(r->slot[i].dev = k->alloc(r->bytes))) {
            input_ring_destroy(r);
            return -1;
        }
        memset(r->slot[i].host, 0, r->bytes); /* a short batch uploads the unused tail too: keep it defined */
        r->slot[i].state = SLOT_FREE;
    }
    /* A device table zero-fills new buffers on its compute stream; the uploads run on the copy stream,
     * which is not ordered after it, so the fill must be over before the first upload. */
    if (k->sync)
        k->sync();
    return 0;
}

void input_ring_destroy(struct input_ring *r)
{
    for (int i = 0; i < INPUT_RING_SLOTS; i++) {
        if (r->slot[i].state == SLOT_CONSUMED)
            r->e->wait_consumed(i);
        if (r->slot[i].host)
            r->e->host_free(r->slot[i].host);
        if (r->slot[i].dev)
            r->k->release(r->slot[i].dev);
    }
    memset(r, 0, sizeof *r);
}

struct input_batch *input_ring_begin(struct input_ring *r, int B, int augment)
{
    const int i = (int)(r->filled % INPUT_RING_SLOTS);
    if (B < 0 || B > r->max_batch || (r->filled > 0 && r->slot[(r->filled - 1) % INPUT_RING_SLOTS].state == SLOT_FILLING))
        return NULL;
    switch (r->slot[i].state) {
    case SLOT_FILLING:
    case SLOT_IN_FLIGHT:
    case SLOT_TAKEN:
        return NULL; /* its batch has not been consumed: taking the slot would overwrite it */
    case SLOT_CONSUMED:
        /* The upload that read the host buffer finished before the compute stream consumed the device
         * copy, so this one wait covers both buffers of the slot. */
        r->e->wait_consumed(i);
        break;
    case SLOT_FREE:
        break;
    }
    r->slot[i].state = SLOT_FILLING;
    struct input_batch *b = &r->slot[i].batch;
    view(b, r->slot[i].host, r->max_batch);
    b->B = B;
    b->augment = augment;
    b->number = r->filled++;
    return b;
}

void input_ring_submit(struct input_ring *r)
{
    const int i = (int)((r->filled - 1) % INPUT_RING_SLOTS);
    if (r->filled == 0 || r->slot[i].state != SLOT_FILLING)
        return;
    /* The whole slot: the parameters sit after max_batch labels, so a short last batch still needs the
     * tail; the copy is at most max_batch * 3 KiB, and one copy beats three. */
    r->e->upload(i, r->slot[i].dev, r->slot[i].host, r->bytes);
    r->slot[i].state = SLOT_IN_FLIGHT;
}

const struct input_batch *input_ring_take(struct input_ring *r, struct input_batch *dev_view)
{
    const int i = (int)(r->taken % INPUT_RING_SLOTS);
    if (r->taken >= r->filled || r->slot[i].state != SLOT_IN_FLIGHT)
        return NULL;
    r->e->wait_arrived(i);
    r->slot[i].state = SLOT_TAKEN;
    *dev_view = r->slot[i].batch;
    view(dev_view, r->slot[i].dev, r->max_batch);
    return dev_view;
}

void input_ring_done(struct input_ring *r)
{
    const int i = (int)(r->taken % INPUT_RING_SLOTS);
    if (r->slot[i].state != SLOT_TAKEN)
        return;
    r->e->mark_consumed(i);
    r->slot[i].state = SLOT_CONSUMED;
    r->taken++;
}

int input_ring_feed(struct input_ring *r, const uint8_t *set_images, const uint32_t *index, const uint8_t *labels,
                    int B, const struct augment_params *params, struct model *m)
{
    struct input_batch *b = B <= m->max_batch ? input_ring_begin(r, B, params != NULL) : NULL, dev;
    if (!b)
        return -1;
    for (int i = 0; i < B; i++)
        memcpy(b->images + (size_t)i * CIFAR_IMAGE_BYTES,
               set_images + (size_t)(index ? index[i] : (uint32_t)i) * CIFAR_IMAGE_BYTES, CIFAR_IMAGE_BYTES);
    memcpy(b->labels, labels, (size_t)B);
    if (params)
        memcpy(b->params, params, (size_t)B * sizeof *params);
    input_ring_submit(r);
    if (!input_ring_take(r, &dev))
        return -1;
    r->e->augment(dev.images, dev.augment ? dev.params : NULL, dev.labels, B, m->x, m->labels);
    input_ring_done(r);
    return 0;
}
