/* input_ring's bookkeeping against a fake copy engine that models the two streams as queues of events
 * and checks, at every step, what the real GPU could get wrong silently:
 *  - a host buffer is never rewritten while its upload may still read it, a device slot never while the
 *    augmentation of its previous batch may still read it (begin must wait for the slot's consumption);
 *  - batches come out in submission order, through alternating slots, with their own content;
 *  - the compute side waits for exactly the upload of the slot it takes;
 *  - calls out of order (take before submit, a third begin with two slots in flight) are refused;
 *  - a short last batch, and destroy waiting for what is still in flight;
 *  - input_ring_feed (the trainer's use) gives the model exactly what augment_batch / augment_convert_batch
 *    give on the host, with the fake engine's augment running augment_image on the "device" copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#include "io/cifar_data.h"
#include "input/input_ring.h"
#include "core/model.h"
#include "core/rng.h"


/* The fake device: "device memory" is host memory; an upload is only recorded (pending) and lands when
 * the compute side waits for it, as a copy stream would complete it by then at the latest. A slot's
 * consumption is pending until the host waits for it. */
static struct {
    int upload_pending[INPUT_RING_SLOTS];
    void *dst[INPUT_RING_SLOTS];
    const void *src[INPUT_RING_SLOTS];
    size_t bytes[INPUT_RING_SLOTS];
    int consume_pending[INPUT_RING_SLOTS];
    int arrived_waits, consumed_waits, host_allocs, host_frees;
} dev;

static void *fake_host_alloc(size_t bytes)
{
    dev.host_allocs++;
    return malloc(bytes);
}
static void fake_host_free(void *p)
{
    dev.host_frees++;
    free(p);
}
static void fake_upload(int slot, void *d, const void *h, size_t bytes)
{
    CHECK(!dev.upload_pending[slot], "slot %d uploaded again before its last upload landed", slot);
    CHECK(!dev.consume_pending[slot], "slot %d's device buffer overwritten while its consumer may run", slot);
    dev.upload_pending[slot] = 1;
    dev.dst[slot] = d, dev.src[slot] = h, dev.bytes[slot] = bytes;
}
static void fake_wait_arrived(int slot)
{
    CHECK(dev.upload_pending[slot], "compute waits for slot %d but nothing was uploaded", slot);
    memcpy(dev.dst[slot], dev.src[slot], dev.bytes[slot]);
    dev.upload_pending[slot] = 0;
    dev.arrived_waits++;
}
static void fake_mark_consumed(int slot) { dev.consume_pending[slot] = 1; }
static void fake_wait_consumed(int slot)
{
    dev.consume_pending[slot] = 0;
    dev.consumed_waits++;
}
static void fake_augment(const uint8_t *images, const struct augment_params *params, const uint8_t *labels_in, int B,
                         float *x, uint8_t *labels)
{
    for (int b = 0; b < B; b++) {
        const uint8_t *img = images + (size_t)b * CIFAR_IMAGE_BYTES;
        float *out = x + (size_t)b * CIFAR_IMAGE_BYTES;
        if (params)
            augment_image(img, CIFAR_H, CIFAR_W, CIFAR_C, &params[b], out);
        else
            augment_convert(img, CIFAR_IMAGE_BYTES, out);
        labels[b] = labels_in[b];
    }
}
static const struct input_engine fake = {
    .augment = fake_augment,
    .host_alloc = fake_host_alloc,
    .host_free = fake_host_free,
    .upload = fake_upload,
    .wait_arrived = fake_wait_arrived,
    .mark_consumed = fake_mark_consumed,
    .wait_consumed = fake_wait_consumed,
};

/* Batch n's content: image bytes, labels and parameters all derived from n. */
static void fill(struct input_batch *b)
{
    for (int i = 0; i < b->B; i++) {
        memset(b->images + (size_t)i * CIFAR_IMAGE_BYTES, (int)((b->number * 7 + i) & 0xff), CIFAR_IMAGE_BYTES);
        b->labels[i] = (uint8_t)((b->number + i) % 10);
        b->params[i] = (struct augment_params){.shift_rows = (float)b->number, .shift_cols = (float)i, .flip = i & 1};
    }
}

static void expect(const struct input_batch *d, long number, int B)
{
    CHECK(d && d->number == number && d->B == B, "took batch %ld (B=%d), wanted %ld (B=%d)", d ? d->number : -1,
          d ? d->B : -1, number, B);
    if (!d)
        return;
    for (int i = 0; i < B; i++) {
        const uint8_t want = (uint8_t)((number * 7 + i) & 0xff);
        CHECK(d->images[(size_t)i * CIFAR_IMAGE_BYTES] == want && d->images[(size_t)(i + 1) * CIFAR_IMAGE_BYTES - 1] == want,
              "batch %ld image %d has another batch's pixels", number, i);
        CHECK(d->labels[i] == (uint8_t)((number + i) % 10), "batch %ld label %d", number, i);
        CHECK(d->params[i].shift_rows == (float)number && d->params[i].shift_cols == (float)i &&
                  d->params[i].flip == (i & 1),
              "batch %ld params %d", number, i);
    }
}

int main(void)
{
    struct input_ring r;
    const int max = 5;
    REQUIRE(input_ring_create(&r, &fake, &kernels_cpu, max) == 0, "input_ring_create refused");
    struct input_batch view, *b;

    /* Out of order: nothing to take yet; done without take does nothing. */
    CHECK(input_ring_take(&r, &view) == NULL, "take before any submit");
    input_ring_done(&r);
    CHECK(r.taken == 0, "done without take counted a batch");
    CHECK(input_ring_begin(&r, max + 1, 1) == NULL, "a batch larger than max_batch accepted");

    /* The pipeline as the trainer runs it: batch s is filled and submitted, then taken and consumed;
     * with one batch of look-ahead (fill s+1 before consuming s) both slots are busy at once. */
    const long batches = 9;
    b = input_ring_begin(&r, max, 1);
    fill(b);
    input_ring_submit(&r);
    for (long s = 0; s < batches; s++) {
        const int B = s == batches - 1 ? 2 : max; /* a short last batch */
        if (s + 1 < batches) {
            const int waits = dev.consumed_waits;
            b = input_ring_begin(&r, s + 1 == batches - 1 ? 2 : max, 1);
            CHECK(b != NULL, "begin of batch %ld refused", s + 1);
            if (!b)
                break;
            CHECK(b->number == s + 1, "begin numbered %ld, wanted %ld", b->number, s + 1);
            CHECK(dev.consumed_waits == waits + (s + 1 >= INPUT_RING_SLOTS),
                  "begin of batch %ld: %d waits for the slot's consumption, wanted %d", s + 1,
                  dev.consumed_waits - waits, s + 1 >= INPUT_RING_SLOTS);
            CHECK(input_ring_begin(&r, max, 1) == NULL, "a second begin before submit accepted");
            fill(b);
            input_ring_submit(&r);
            CHECK(input_ring_begin(&r, max, 1) == NULL, "a third batch accepted with both slots in flight");
        }
        const int arrived = dev.arrived_waits;
        const struct input_batch *d = input_ring_take(&r, &view);
        CHECK(dev.arrived_waits == arrived + 1, "take of batch %ld did not wait for its upload", s);
        expect(d, s, B);
        CHECK(d && (uint8_t *)d->images == r.slot[s % INPUT_RING_SLOTS].dev, "batch %ld not in slot %ld", s,
              s % INPUT_RING_SLOTS);
        CHECK(input_ring_take(&r, &view) == NULL || s + 1 < batches, "take of a taken batch");
        input_ring_done(&r);
    }
    CHECK(r.taken == batches && r.filled == batches, "%ld taken, %ld filled, wanted %ld", r.taken, r.filled, batches);

    /* Without look-ahead (fill, take, done in turn) it works the same and never blocks on a slot whose
     * consumer was queued just before. */
    for (long s = 0; s < 3; s++) {
        b = input_ring_begin(&r, 3, 0);
        CHECK(b && b->augment == 0, "begin without augmentation");
        if (!b)
            break;
        fill(b);
        input_ring_submit(&r);
        expect(input_ring_take(&r, &view), batches + s, 3);
        input_ring_done(&r);
    }

    /* The trainer's path: a gathered, augmented batch lands in the model's input as on the host. */
    {
        enum { SET = 11, B = 4 };
        struct model m = {.max_batch = B};
        uint8_t *set = malloc((size_t)SET * CIFAR_IMAGE_BYTES), labels[B] = {3, 1, 4, 1};
        float *want = malloc((size_t)B * CIFAR_IMAGE_BYTES * sizeof(float));
        m.x = malloc((size_t)B * CIFAR_IMAGE_BYTES * sizeof(float));
        m.labels = malloc(B);
        const uint32_t index[B] = {7, 0, 10, 7};
        struct augment_params params[B];
        for (size_t i = 0; i < (size_t)SET * CIFAR_IMAGE_BYTES; i++)
            set[i] = (uint8_t)(rng_u64(5, i) >> 56);
        for (int i = 0; i < B; i++)
            params[i] = augment_params_from_uniform(rng_uniform(9, 3 * (uint64_t)i), rng_uniform(9, 3 * (uint64_t)i + 1),
                                                    rng_uniform(9, 3 * (uint64_t)i + 2), CIFAR_H, CIFAR_W);
        for (int aug = 0; aug < 2; aug++) {
            CHECK(input_ring_feed(&r, set, index, labels, B, aug ? params : NULL, &m) == 0, "feed refused");
            if (aug)
                augment_batch(set, index, B, params, want);
            else
                augment_convert_batch(set, index, B, want);
            CHECK(memcmp(want, m.x, (size_t)B * CIFAR_IMAGE_BYTES * sizeof(float)) == 0,
                  "fed batch (augment %d) differs from the host's", aug);
            CHECK(memcmp(labels, m.labels, B) == 0, "fed labels differ");
        }
        CHECK(input_ring_feed(&r, set, index, labels, B + 1, NULL, &m) != 0, "a batch larger than the model accepted");
        CHECK(input_ring_feed(&r, set, index, labels, B, NULL, &m) == 0, "feed refused after a refused one");
        free(set), free(want), free(m.x), free(m.labels);
    }

    /* Destroy with consumption marks outstanding: it waits for them before freeing. */
    input_ring_destroy(&r);
    CHECK(!dev.consume_pending[0] && !dev.consume_pending[1], "destroy freed slots the device may still read");
    CHECK(dev.host_allocs == INPUT_RING_SLOTS && dev.host_frees == INPUT_RING_SLOTS,
          "pinned buffers: %d allocated, %d freed",
          dev.host_allocs, dev.host_frees);
    return check_exit("test_input_ring");
}
