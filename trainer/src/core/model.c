#include "core/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "core/rng.h"

#define RELU(n) {.kind = MODEL_ACTIVATION, .name = n, .activation = "relu"}

/* THE model: the seed script's Sequential model, layer for layer (trainer.md). Only the columns above
 * "Derived" in struct model_layer are written here; model_derive fills the rest. */
static struct model_layer table[] = {
    {.kind = MODEL_CONV, .name = "conv2d_1", .units = 32, .size = 3, .pad = 1},
    RELU("activation_1"),
    {.kind = MODEL_CONV, .name = "conv2d_2", .units = 32, .size = 3, .pad = 0},
    RELU("activation_2"),
    {.kind = MODEL_MAXPOOL, .name = "max_pooling2d_1", .size = 2},
    {.kind = MODEL_DROPOUT, .name = "dropout_1", .rate = 0.25},
    {.kind = MODEL_CONV, .name = "conv2d_3", .units = 64, .size = 3, .pad = 1},
    RELU("activation_3"),
    {.kind = MODEL_CONV, .name = "conv2d_4", .units = 64, .size = 3, .pad = 0},
    RELU("activation_4"),
    {.kind = MODEL_MAXPOOL, .name = "max_pooling2d_2", .size = 2},
    {.kind = MODEL_DROPOUT, .name = "dropout_2", .rate = 0.25},
    {.kind = MODEL_FLATTEN, .name = "flatten_1"},
    {.kind = MODEL_DENSE, .name = "dense_1", .units = 512},
    RELU("activation_5"),
    {.kind = MODEL_DROPOUT, .name = "dropout_3", .rate = 0.5},
    {.kind = MODEL_DENSE, .name = "dense_2", .units = MODEL_CLASSES},
    {.kind = MODEL_ACTIVATION, .name = "activation_6", .activation = "softmax"},
};
#define N_LAYERS ((int)(sizeof table / sizeof table[0]))
#define N_TENSORS_MAX (2 * N_LAYERS)

static struct model_tensor tensors[N_TENSORS_MAX];
static int n_tensors, n_dropout;
static size_t n_params;
static float dropout_rates[MODEL_MAX_DROPOUT];

static _Noreturn void bad_table(const struct model_layer *L, const char *why)
{
    fprintf(stderr, "model.c: layer %s: %s\n", L->name, why);
    abort();
}

static void add_tensor(const struct model_layer *L, const char *weight, int rank, const size_t *shape)
{
    struct model_tensor *t = &tensors[n_tensors++];
    *t = (struct model_tensor){.layer = L->name, .weight = weight, .rank = rank, .offset = n_params, .count = 1};
    for (int i = 0; i < rank; i++) {
        t->shape[i] = shape[i];
        t->count *= shape[i];
    }
    n_params += t->count;
}

/* ---- each kind's Keras class and config (Keras 2.1.6's get_config(), in its key order) ---- */

static const char *const initializers =
    "\"kernel_initializer\": {\"class_name\": \"VarianceScaling\", \"config\": {\"scale\": 1.0, \"mode\": "
    "\"fan_avg\", \"distribution\": \"uniform\", \"seed\": null}}, \"bias_initializer\": {\"class_name\": "
    "\"Zeros\", \"config\": {}}, \"kernel_regularizer\": null, \"bias_regularizer\": null, "
    "\"activity_regularizer\": null, \"kernel_constraint\": null, \"bias_constraint\": null";

static void conv_config(const struct model_layer *L, const struct model_json *j)
{
    char t[1024];
    snprintf(t, sizeof t,
             ", \"filters\": %d, \"kernel_size\": [%d, %d], \"strides\": [1, 1], \"padding\": \"%s\", "
             "\"data_format\": \"channels_last\", \"dilation_rate\": [1, 1], \"activation\": \"linear\", "
             "\"use_bias\": true, %s",
             L->units, L->size, L->size, L->pad ? "same" : "valid", initializers);
    j->text(j->ctx, t);
}

static void dense_config(const struct model_layer *L, const struct model_json *j)
{
    char t[1024];
    snprintf(t, sizeof t, ", \"units\": %d, \"activation\": \"linear\", \"use_bias\": true, %s", L->units,
             initializers);
    j->text(j->ctx, t);
}

static void maxpool_config(const struct model_layer *L, const struct model_json *j)
{
    char t[256];
    snprintf(t, sizeof t,
             ", \"pool_size\": [%d, %d], \"padding\": \"valid\", \"strides\": [%d, %d], "
             "\"data_format\": \"channels_last\"",
             L->size, L->size, L->size, L->size);
    j->text(j->ctx, t);
}

static void flatten_config(const struct model_layer *L, const struct model_json *j)
{
    (void)L;
    j->text(j->ctx, ", \"data_format\": \"channels_last\"");
}

static void activation_config(const struct model_layer *L, const struct model_json *j)
{
    char t[128];
    snprintf(t, sizeof t, ", \"activation\": \"%s\"", L->activation);
    j->text(j->ctx, t);
}

static void dropout_config(const struct model_layer *L, const struct model_json *j)
{
    j->text(j->ctx, ", \"rate\": ");
    j->pyfloat(j->ctx, L->rate);
    j->text(j->ctx, ", \"noise_shape\": null, \"seed\": null");
}

static const struct kind {
    const char *keras_class;
    void (*keras_config)(const struct model_layer *L, const struct model_json *j);
} kinds[] = {
    [MODEL_CONV] = {"Conv2D", conv_config},
    [MODEL_DENSE] = {"Dense", dense_config},
    [MODEL_MAXPOOL] = {"MaxPooling2D", maxpool_config},
    [MODEL_FLATTEN] = {"Flatten", flatten_config},
    [MODEL_ACTIVATION] = {"Activation", activation_config},
    [MODEL_DROPOUT] = {"Dropout", dropout_config},
};

void model_keras_config(const struct model_layer *L, const struct model_json *out) { kinds[L->kind].keras_config(L, out); }

static int is_relu(const struct model_layer *L)
{
    return L && L->kind == MODEL_ACTIVATION && strcmp(L->activation, "relu") == 0;
}

/* Fills the derived columns and the tensors, checking each layer is one the passes support (model.h). */
static void model_derive(void)
{
    int h = MODEL_IN_H, w = MODEL_IN_W, c = MODEL_IN_C;
    for (int i = 0; i < N_LAYERS; i++) {
        struct model_layer *L = &table[i];
        const struct model_layer *prev = i ? &table[i - 1] : NULL;
        L->keras_class = kinds[L->kind].keras_class;
        L->tensor = n_tensors;
        L->dropout = -1;
        switch (L->kind) {
        case MODEL_CONV: {
            if (L->size != 3 || (L->pad != 0 && L->pad != 1) || h + 2 * L->pad < 3 || w + 2 * L->pad < 3)
                bad_table(L, "only 3x3 convolutions, pad 0 or 1, on images of at least their size");
            const size_t kshape[4] = {(size_t)L->size, (size_t)L->size, (size_t)c, (size_t)L->units};
            add_tensor(L, "kernel:0", 4, kshape);
            h += 2 * L->pad - (L->size - 1);
            w += 2 * L->pad - (L->size - 1);
            c = L->units;
            break;
        }
        case MODEL_DENSE: {
            if (h != 1 || w != 1)
                bad_table(L, "a Dense layer needs a flat input (Flatten first)");
            const size_t kshape[2] = {(size_t)c, (size_t)L->units};
            add_tensor(L, "kernel:0", 2, kshape);
            c = L->units;
            break;
        }
        case MODEL_MAXPOOL:
            if (L->size != 2 || h < 2 || w < 2)
                bad_table(L, "only 2x2 pooling, on images of at least that size");
            h /= L->size;
            w /= L->size;
            break;
        case MODEL_FLATTEN:
            c *= h * w;
            h = w = 1;
            break;
        case MODEL_ACTIVATION:
            if (!prev || (prev->kind != MODEL_CONV && prev->kind != MODEL_DENSE))
                bad_table(L, "an Activation must follow a Conv2D or a Dense layer (it is fused into it)");
            if (!is_relu(L) && (strcmp(L->activation, "softmax") != 0 || i != N_LAYERS - 1 ||
                                prev->kind != MODEL_DENSE))
                bad_table(L, "only relu, or softmax after the last Dense (computed with the loss)");
            break;
        case MODEL_DROPOUT:
            if (!prev || (prev->kind != MODEL_MAXPOOL && !(is_relu(prev) && table[i - 2].kind == MODEL_DENSE)))
                bad_table(L, "a Dropout must follow a MaxPooling2D, or a Dense layer's relu");
            if (!(L->rate >= 0.0 && L->rate < 1.0) || n_dropout == MODEL_MAX_DROPOUT)
                bad_table(L, "rate outside [0, 1), or more dropout layers than MODEL_MAX_DROPOUT");
            L->dropout = n_dropout;
            dropout_rates[n_dropout++] = (float)L->rate;
            break;
        }
        if (L->kind == MODEL_CONV || L->kind == MODEL_DENSE) { /* Keras's use_bias: the bias after the kernel */
            const size_t bshape[1] = {(size_t)L->units};
            add_tensor(L, "bias:0", 1, bshape);
        }
        L->ntensors = n_tensors - L->tensor;
        L->h = h;
        L->w = w;
        L->c = c;
    }
    const struct model_layer *last = &table[N_LAYERS - 1];
    if (last->kind != MODEL_ACTIVATION || strcmp(last->activation, "softmax") != 0 || last->c != MODEL_CLASSES)
        bad_table(last, "the model must end with a Dense of MODEL_CLASSES units and softmax");
}

static once_flag derived = ONCE_FLAG_INIT;

int model_nlayers(void) { return N_LAYERS; }

const struct model_layer *model_layer(int i)
{
    call_once(&derived, model_derive);
    return &table[i];
}

int model_ntensors(void)
{
    call_once(&derived, model_derive);
    return n_tensors;
}

const struct model_tensor *model_tensor(int t)
{
    call_once(&derived, model_derive);
    return &tensors[t];
}

size_t model_nparams(void)
{
    call_once(&derived, model_derive);
    return n_params;
}

int model_ndropout(void)
{
    call_once(&derived, model_derive);
    return n_dropout;
}

float model_dropout_rate(int d)
{
    call_once(&derived, model_derive);
    return dropout_rates[d];
}

void model_init_params(float *params, uint64_t seed)
{
    const uint64_t key = rng_key(seed, 0, 0, 0, RNG_INIT);
    for (int t = 0; t < model_ntensors(); t++) {
        const struct model_tensor *mt = model_tensor(t);
        float *p = params + mt->offset;
        if (mt->rank == 1) {
            memset(p, 0, mt->count * sizeof(float));
            continue;
        }
        /* glorot_uniform: fan_in = receptive field * in, fan_out = receptive field * out. */
        const size_t out = mt->shape[mt->rank - 1];
        const double fan_in = (double)(mt->count / out), receptive = fan_in / (double)mt->shape[mt->rank - 2];
        const double limit = sqrt(6.0 / (fan_in + receptive * (double)out));
        const uint64_t tkey = rng_u64(key, (uint64_t)t);
        for (size_t i = 0; i < mt->count; i++)
            p[i] = (float)((2.0 * rng_uniform(tkey, i) - 1.0) * limit);
    }
}

/* One layer's buffers. Layers that compute in place or not at all (Activation, Dropout after a Dense,
 * Flatten, and those fused into the layer before them) share the output of the layer before. */
struct model_slot {
    float *y;     /* output, B x h x w x c */
    void *saved;  /* MODEL_CONV: the table's state from forward to backward (kernels.h conv3x3_saved) */
    uint8_t *idx; /* MODEL_MAXPOOL: argmax and kept bits */
};

/* The shape of one image at layer i's input. */
static void in_shape(int i, int *h, int *w, int *c)
{
    const struct model_layer *p = i ? model_layer(i - 1) : NULL;
    *h = p ? p->h : MODEL_IN_H;
    *w = p ? p->w : MODEL_IN_W;
    *c = p ? p->c : MODEL_IN_C;
}

static size_t up64(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* The next `bytes` (rounded to 64) of an arena at `base`: NULL when base is NULL (measuring) or bytes 0. */
static void *take(char *base, size_t *used, size_t bytes)
{
    void *p = base && bytes ? base + *used : NULL;
    *used += up64(bytes);
    return p;
}

/* Lays out a batch of B images' buffers from `base` (float buffers first, in table order, then the
 * bytes), or only measures them when base is NULL; returns the bytes used. */
static size_t carve(struct model *m, char *base, size_t B)
{
    const size_t F = sizeof(float);
    size_t used = 0, biggest = 0;
    m->x = take(base, &used, B * MODEL_IN_H * MODEL_IN_W * MODEL_IN_C * F);
    float *prev = m->x;
    for (int i = 0; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i);
        struct model_slot *s = &m->slots[i];
        const size_t out = (size_t)L->h * L->w * L->c;
        s->y = prev;
        if (L->kind == MODEL_CONV) {
            int ih, iw, ic;
            in_shape(i, &ih, &iw, &ic);
            s->saved = take(base, &used, m->k->conv3x3_saved((int)B, ih, iw, ic, L->pad));
        }
        if (L->kind == MODEL_CONV || L->kind == MODEL_DENSE || L->kind == MODEL_MAXPOOL)
            s->y = take(base, &used, B * out * F);
        prev = s->y;
        if (out > biggest)
            biggest = out;
    }
    m->dlogits = take(base, &used, B * MODEL_CLASSES * F);
    m->g_big = take(base, &used, B * biggest * F);
    m->g_small = take(base, &used, B * biggest * F);
    for (int i = 0; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i);
        if (L->kind == MODEL_MAXPOOL)
            m->slots[i].idx = take(base, &used, B * (size_t)L->h * L->w * L->c);
    }
    m->labels = take(base, &used, B);
    return used;
}

int model_create(struct model *m, const struct kernels *k, int max_batch, float *params, float *grads)
{
    memset(m, 0, sizeof *m);
    m->k = k;
    m->max_batch = max_batch;
    m->slots = calloc((size_t)model_nlayers(), sizeof *m->slots);
    if (!m->slots) {
        model_destroy(m);
        return -1;
    }
    const size_t total = carve(m, NULL, (size_t)max_batch);
    m->arena = k->alloc(total);
    m->step = k->alloc(sizeof *m->step);
    m->sums = k->alloc(2 * sizeof *m->sums); /* alloc zero-fills */
    m->lent = grads != NULL;
    m->params = params ? params : k->alloc(MODEL_NPARAMS * sizeof(float));
    m->grads = grads ? grads : k->alloc(MODEL_NPARAMS * sizeof(float));
    if (!m->arena || !m->params || !m->grads || !m->step || !m->sums) {
        model_destroy(m);
        return -1;
    }
    carve(m, m->arena, (size_t)max_batch);
    return 0;
}

void model_destroy(struct model *m)
{
    free(m->slots);
    if (m->k) {
        m->k->release(m->arena);
        if (!m->lent) {
            m->k->release(m->params);
            m->k->release(m->grads);
        }
        m->k->release(m->step);
        m->k->release(m->sums);
    }
    memset(m, 0, sizeof *m);
}

void model_set_params(struct model *m, const float *host_params)
{
    m->k->upload(m->params, host_params, MODEL_NPARAMS * sizeof(float));
}

void model_get_params(const struct model *m, float *host_params)
{
    m->k->download(host_params, m->params, MODEL_NPARAMS * sizeof(float));
}

static const float *W(struct model *m, int t) { return m->params + model_tensor(t)->offset; }
static float *G(struct model *m, int t) { return m->grads + model_tensor(t)->offset; }

uint64_t model_dropout_key(uint64_t dropout_key, int d) { return rng_u64(dropout_key, (uint64_t)d); }

void model_set_step(struct model *m, uint64_t dropout_key, float lr_t)
{
    struct step_values v = {.lr_t = lr_t};
    for (int d = 0; d < model_ndropout(); d++)
        v.dropout[d] = model_dropout_key(dropout_key, d);
    m->k->upload(m->step, &v, sizeof v);
}

void model_clear_sums(struct model *m)
{
    static const double zero[2];
    m->k->upload(m->sums, zero, sizeof zero);
}

void model_read_sums(const struct model *m, double *loss_sum, int *correct)
{
    double s[2];
    m->k->download(s, m->sums, sizeof s);
    *loss_sum = s[0];
    *correct = (int)s[1];
}

/* Layer i + 1 when it exists and is of `kind`, else NULL: what is fused into layer i. */
static const struct model_layer *followed_by(int i, enum model_kind kind)
{
    const struct model_layer *n = i + 1 < model_nlayers() ? model_layer(i + 1) : NULL;
    return n && n->kind == kind ? n : NULL;
}

static int relu_follows(int i)
{
    const struct model_layer *a = followed_by(i, MODEL_ACTIVATION);
    return a && strcmp(a->activation, "relu") == 0;
}

/* The table walked in order: each layer's kernel calls, with what model.h says is fused into it. */
void model_load(struct model *m, const float *x, const uint8_t *labels, int B)
{
    m->k->upload(m->x, x, (size_t)B * MODEL_IN_H * MODEL_IN_W * MODEL_IN_C * sizeof(float));
    m->k->upload(m->labels, labels, (size_t)B);
}

void model_forward(struct model *m, int B, int train)
{
    const struct kernels *k = m->k;
    /* At inference a table may run the first rows its own way (kernels.h: infer); the walk goes on from
     * there. */
    const int first = !train && k->infer ? k->infer->rows() : 0;
    if (first)
        k->infer->run(m->params, m->x, B, m->slots[first - 1].y);
    float *in = first ? m->slots[first - 1].y : m->x;
    for (int i = first; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i);
        const struct model_slot *s = &m->slots[i];
        int ih, iw, ic;
        in_shape(i, &ih, &iw, &ic);
        if (m->trace)
            m->trace(m->trace_ctx, i, 0);
        switch (L->kind) {
        case MODEL_CONV:
            k->conv3x3_forward(in, B, ih, iw, ic, L->pad, W(m, L->tensor), W(m, L->tensor + 1), L->units,
                               relu_follows(i), s->saved, s->y);
            break;
        case MODEL_DENSE:
            k->dense_forward(in, B, ih * iw * ic, W(m, L->tensor), W(m, L->tensor + 1), L->units, relu_follows(i),
                             s->y);
            break;
        case MODEL_MAXPOOL: {
            const struct model_layer *d = followed_by(i, MODEL_DROPOUT);
            k->pool_dropout_forward(in, B, ih, iw, ic, d && train ? (float)d->rate : 0.0f,
                                    d ? &m->step->dropout[d->dropout] : NULL, s->y, train ? s->idx : NULL);
            break;
        }
        case MODEL_DROPOUT: /* after a pooling it was fused there; else in place on a Dense's output */
            if (model_layer(i - 1)->kind != MODEL_MAXPOOL)
                k->dropout_forward(s->y, (size_t)B * L->h * L->w * L->c, train ? (float)L->rate : 0.0f,
                                   &m->step->dropout[L->dropout]);
            break;
        case MODEL_ACTIVATION: /* relu was fused into the layer before; softmax ends the model */
            if (!is_relu(L))
                k->softmax_xent(s->y, m->labels, B, MODEL_CLASSES, NULL, train ? m->dlogits : NULL, m->sums);
            break;
        case MODEL_FLATTEN: /* a no-op in NHWC */
            break;
        }
        in = s->y;
    }
    if (m->trace)
        m->trace(m->trace_ctx, -1, 0);
}

const float *model_output(const struct model *m, int row) { return m->slots[row].y; }

/* The table walked backwards. The gradient dy (of the loss w.r.t. the output of the layers seen so far)
 * starts as softmax_xent's d loss / d logits; Activation and Dropout layers after a Conv2D or Dense only
 * record what that layer's backward folds in (the ReLU, the dropout's scale); each layer that
 * produces an input gradient writes it to the other ping-pong buffer. */
void model_backward(struct model *m, int B, model_grads_ready_fn ready, void *ctx)
{
    const struct kernels *k = m->k;
    float *const pingpong[2] = {m->g_small, m->g_big};
    int turn = 0, relu = 0;
    float scale = 1.0f, *dy = m->dlogits;
    for (int i = model_nlayers() - 1; i >= 0; i--) {
        const struct model_layer *L = model_layer(i);
        const struct model_slot *s = &m->slots[i];
        float *in = i ? m->slots[i - 1].y : m->x;
        float *dx = i ? pingpong[turn] : NULL; /* the input needs no gradient */
        int ih, iw, ic;
        in_shape(i, &ih, &iw, &ic);
        if (m->trace)
            m->trace(m->trace_ctx, i, 1);
        switch (L->kind) {
        case MODEL_ACTIVATION:
            relu = is_relu(L);
            continue;
        case MODEL_DROPOUT:
            if (model_layer(i - 1)->kind != MODEL_MAXPOOL)
                scale = 1.0f / (1.0f - (float)L->rate);
            continue;
        case MODEL_FLATTEN:
            continue;
        case MODEL_MAXPOOL: {
            const struct model_layer *d = followed_by(i, MODEL_DROPOUT);
            k->pool_dropout_backward(dy, s->idx, B, ih, iw, ic, d ? (float)d->rate : 0.0f, dx);
            break;
        }
        case MODEL_CONV:
        case MODEL_DENSE:
            if (L->kind == MODEL_CONV)
                k->conv3x3_backward(in, s->y, dy, B, ih, iw, ic, L->pad, W(m, L->tensor), L->units, relu, scale,
                                    s->saved, G(m, L->tensor), G(m, L->tensor + 1), dx);
            else
                k->dense_backward(in, s->y, dy, B, ih * iw * ic, W(m, L->tensor), L->units, relu, scale,
                                  G(m, L->tensor), G(m, L->tensor + 1), dx);
            if (ready)
                ready(ctx, m->grads, L->tensor, L->ntensors);
            relu = 0;
            scale = 1.0f;
            break;
        }
        dy = dx;
        turn ^= 1;
    }
    if (m->trace)
        m->trace(m->trace_ctx, -1, 1);
}
