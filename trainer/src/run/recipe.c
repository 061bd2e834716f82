#include "run/recipe.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/model.h"

enum kind { INT, REAL, DIGEST };
static const struct {
    const char *name;
    enum kind kind;
} fields[RECIPE_NFIELDS] = {
    [RECIPE_MODEL] = {"model", DIGEST},          [RECIPE_BATCH] = {"batch_size", INT},
    [RECIPE_EPOCHS] = {"epochs", INT},           [RECIPE_LR] = {"lr", REAL},
    [RECIPE_SEED] = {"seed", INT},               [RECIPE_AUGMENT] = {"augmentation", INT},
    [RECIPE_SHARD] = {"shard", INT},             [RECIPE_TRAIN_IMAGES] = {"train_images", INT},
    [RECIPE_TEST_IMAGES] = {"test_images", INT}, [RECIPE_TRAIN_DATA] = {"train_data", DIGEST},
    [RECIPE_TEST_DATA] = {"test_data", DIGEST},
};

/* Word by word, multiply and fold (the tail byte by byte): fast enough that fingerprinting the full CIFAR-10
 * at start is negligible beside training (docs/benchmarks.md, "Figures behind code comments"). */
uint64_t recipe_fingerprint(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    const uint64_t k = 0x9e3779b97f4a7c15u;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * k;
        h ^= h >> 32;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * k;
    return h ^ (uint64_t)n;
}

static uint64_t set_digest(const struct cifar_set *s)
{
    uint64_t h = recipe_fingerprint(s->labels, s->n, 1);
    return recipe_fingerprint(s->images, s->n * CIFAR_IMAGE_BYTES, h);
}

static uint64_t model_digest(void)
{
    uint64_t h = 2;
    for (int t = 0; t < model_ntensors(); t++) {
        const struct model_tensor *m = model_tensor(t);
        h = recipe_fingerprint(m->layer, strlen(m->layer), h);
        h = recipe_fingerprint(m->weight, strlen(m->weight), h);
        for (int d = 0; d < m->rank; d++)
            h = recipe_fingerprint(&(uint64_t){m->shape[d]}, 8, h);
    }
    return h;
}

void recipe_of(struct recipe *r, const struct train_options *o, int world_size, const struct cifar_set *train,
               const struct cifar_set *test)
{
    memset(r, 0, sizeof *r);
    r->v[RECIPE_MODEL] = (int64_t)model_digest();
    r->v[RECIPE_BATCH] = o->batch;
    r->v[RECIPE_EPOCHS] = o->epochs > 0 ? o->epochs : (100 + world_size - 1) / world_size;
    memcpy(&r->v[RECIPE_LR], &o->lr, sizeof o->lr);
    r->v[RECIPE_SEED] = (int64_t)o->seed;
    r->v[RECIPE_AUGMENT] = o->augment;
    r->v[RECIPE_SHARD] = o->shard;
    r->v[RECIPE_TRAIN_IMAGES] = (int64_t)train->n;
    r->v[RECIPE_TEST_IMAGES] = (int64_t)test->n;
    r->v[RECIPE_TRAIN_DATA] = (int64_t)set_digest(train);
    r->v[RECIPE_TEST_DATA] = (int64_t)set_digest(test);
}

static void value(char *buf, size_t len, int f, int64_t v)
{
    double d;
    switch (fields[f].kind) {
    case INT: snprintf(buf, len, "%" PRId64, v); break;
    case REAL:
        memcpy(&d, &v, sizeof d);
        snprintf(buf, len, d > 0 ? "%g" : "default", d);
        break;
    case DIGEST: snprintf(buf, len, "%016" PRIx64, (uint64_t)v); break;
    }
}

/* Appends to msg[len] at *used; what does not fit is cut (snprintf's truncation). */
static void append(char *msg, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg + *used, len - *used, fmt, ap);
    va_end(ap);
    *used = n < 0 ? *used : *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

int recipe_compare(const struct recipe *all, int size, char *msg, size_t len)
{
    int differ = 0;
    size_t used = 0;
    msg[0] = '\0';
    for (int r = 1; r < size; r++) {
        int items = 0;
        for (int f = 0; f < RECIPE_NFIELDS; f++) {
            if (all[r].v[f] == all[0].v[f])
                continue;
            char mine[32], root[32];
            value(mine, sizeof mine, f, all[r].v[f]);
            value(root, sizeof root, f, all[0].v[f]);
            if (!items++)
                append(msg, len, &used, "%srank %d: ", differ++ ? "\n" : "", r);
            append(msg, len, &used, "%s%s %s (rank 0: %s)", items > 1 ? ", " : "", fields[f].name, mine, root);
        }
    }
    return differ;
}
