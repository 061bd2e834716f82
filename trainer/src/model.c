#include "model.h"

#include <math.h>
#include <string.h>

#include "keras_h5.h"
#include "layers.h"
#include "rng.h"

const float model_dropout_rates[3] = {0.25f, 0.25f, 0.5f};

void model_init_params(float *params, uint64_t seed)
{
    const uint64_t key = rng_key(seed, 0, 0, 0, RNG_INIT);
    for (int t = 0; t < KERAS_N_TENSORS; t++) {
        const struct keras_tensor *mt = &keras_tensors[t];
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

/* Activation sizes per image. */
enum {
    SZ_X = 32 * 32 * 3,
    SZ_COL1 = 32 * 32 * 27,
    SZ_A1 = 32 * 32 * 32,
    SZ_COL2 = 30 * 30 * 288,
    SZ_A2 = 30 * 30 * 32,
    SZ_P1 = 15 * 15 * 32,
    SZ_COL3 = 15 * 15 * 288,
    SZ_A3 = 15 * 15 * 64,
    SZ_COL4 = 13 * 13 * 576,
    SZ_A4 = 13 * 13 * 64,
    SZ_P2 = 6 * 6 * 64,
    SZ_H = 512,
    SZ_LOGITS = MODEL_CLASSES,
};

static size_t up64(size_t bytes) { return (bytes + 63) / 64 * 64; }

int model_create(struct model *m, const struct kernels *k, int max_batch)
{
    memset(m, 0, sizeof *m);
    m->k = k;
    m->max_batch = max_batch;
    const size_t B = (size_t)max_batch;
    /* One arena: float buffers first (each 64-byte aligned), then the byte buffers. */
    struct {
        float **p;
        size_t n;
    } f[] = {
        {&m->x, SZ_X},        {&m->col1, SZ_COL1},   {&m->a1, SZ_A1},       {&m->col2, SZ_COL2},
        {&m->a2, SZ_A2},      {&m->p1, SZ_P1},       {&m->col3, SZ_COL3},   {&m->a3, SZ_A3},
        {&m->col4, SZ_COL4},  {&m->a4, SZ_A4},       {&m->p2, SZ_P2},       {&m->h, SZ_H},
        {&m->logits, SZ_LOGITS}, {&m->dlogits, SZ_LOGITS}, {&m->g_big, SZ_A1}, {&m->g_small, SZ_A1},
    };
    struct {
        uint8_t **p;
        size_t n;
    } u[] = {{&m->idx1, SZ_P1}, {&m->idx2, SZ_P2}, {&m->labels, 1}};
    if (!k->conv_col) /* a table that keeps no im2col matrices: backward reads the layer inputs */
        for (size_t i = 0; i < sizeof f / sizeof *f; i++)
            if (f[i].p == &m->col1 || f[i].p == &m->col2 || f[i].p == &m->col3 || f[i].p == &m->col4)
                f[i].n = 0;
    size_t total = 0;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        total += up64(f[i].n * B * sizeof(float));
    for (size_t i = 0; i < sizeof u / sizeof *u; i++)
        total += up64(u[i].n * B);
    m->arena = k->alloc(total);
    m->step = k->alloc(sizeof *m->step);
    m->sums = k->alloc(2 * sizeof *m->sums); /* alloc zero-fills */
    m->params = k->alloc(MODEL_NPARAMS * sizeof(float));
    m->grads = k->alloc(MODEL_NPARAMS * sizeof(float));
    if (!m->arena || !m->params || !m->grads || !m->step || !m->sums) {
        model_destroy(m);
        return -1;
    }
    char *at = m->arena;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
        *f[i].p = f[i].n ? (float *)at : NULL;
        at += up64(f[i].n * B * sizeof(float));
    }
    for (size_t i = 0; i < sizeof u / sizeof *u; i++) {
        *u[i].p = (uint8_t *)at;
        at += up64(u[i].n * B);
    }
    return 0;
}

void model_destroy(struct model *m)
{
    if (m->k) {
        m->k->release(m->arena);
        m->k->release(m->params);
        m->k->release(m->grads);
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

static const float *W(struct model *m, int t) { return m->params + keras_tensors[t].offset; }
static float *G(struct model *m, int t) { return m->grads + keras_tensors[t].offset; }

void model_set_step(struct model *m, uint64_t dropout_key, float lr_t)
{
    struct step_values v = {.lr_t = lr_t};
    for (int i = 0; i < 3; i++)
        v.dropout[i] = rng_u64(dropout_key, (uint64_t)i);
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

void model_forward(struct model *m, const float *x, const uint8_t *labels, int B, int train)
{
    const struct kernels *k = m->k;
    const float r0 = train ? model_dropout_rates[0] : 0.0f, r1 = train ? model_dropout_rates[1] : 0.0f,
                r2 = train ? model_dropout_rates[2] : 0.0f;
    if (x != m->x) /* else the batch is already there (input_ring.h: augmented on the device) */
        k->upload(m->x, x, (size_t)B * SZ_X * sizeof(float));
    if (labels != m->labels)
        k->upload(m->labels, labels, (size_t)B);
    layer_conv3x3_forward(k, m->x, B, 32, 32, 3, 1, W(m, 0), W(m, 1), 32, 1, m->col1, m->a1);
    layer_conv3x3_forward(k, m->a1, B, 32, 32, 32, 0, W(m, 2), W(m, 3), 32, 1, m->col2, m->a2);
    k->pool_dropout(m->a2, B, 30, 30, 32, r0, &m->step->dropout[0], m->p1, m->idx1);
    layer_conv3x3_forward(k, m->p1, B, 15, 15, 32, 1, W(m, 4), W(m, 5), 64, 1, m->col3, m->a3);
    layer_conv3x3_forward(k, m->a3, B, 15, 15, 64, 0, W(m, 6), W(m, 7), 64, 1, m->col4, m->a4);
    k->pool_dropout(m->a4, B, 13, 13, 64, r1, &m->step->dropout[1], m->p2, m->idx2);
    layer_dense_forward(k, m->p2, B, SZ_P2, W(m, 8), W(m, 9), 512, 1, m->h);
    k->dropout(m->h, (size_t)B * 512, r2, &m->step->dropout[2]);
    layer_dense_forward(k, m->h, B, 512, W(m, 10), W(m, 11), MODEL_CLASSES, 0, m->logits);
    k->softmax_xent(m->logits, m->labels, B, MODEL_CLASSES, NULL, train ? m->dlogits : NULL, m->sums);
}

/* The gradients of tensors [first, first + 2) (a layer's kernel and bias) are final. */
static void announce(struct model *m, model_grads_ready_fn ready, void *ctx, int first)
{
    if (ready)
        ready(ctx, m->grads, first, 2);
}

void model_backward(struct model *m, int B, model_grads_ready_fn ready, void *ctx)
{
    const struct kernels *k = m->k;
    const float s2 = 1.0f / (1.0f - model_dropout_rates[2]);
    float *gb = m->g_big, *gs = m->g_small;
    /* dense_2 (softmax_xent left d loss / d logits in dlogits) */
    k->bias_act_grad(m->dlogits, m->logits, (size_t)B, MODEL_CLASSES, 0, 1.0f, G(m, 11));
    layer_dense_backward(k, m->dlogits, m->h, B, 512, W(m, 10), MODEL_CLASSES, G(m, 10), gs);
    announce(m, ready, ctx, 10);
    /* dropout_3 (in place on h), ReLU, dense_1 */
    k->bias_act_grad(gs, m->h, (size_t)B, 512, 1, s2, G(m, 9));
    layer_dense_backward(k, gs, m->p2, B, SZ_P2, W(m, 8), 512, G(m, 8), gb);
    announce(m, ready, ctx, 8);
    /* flatten (a no-op in NHWC), dropout_2, max_pooling2d_2, ReLU, conv2d_4 */
    k->pool_dropout_grad(gb, m->idx2, B, 13, 13, 64, model_dropout_rates[1], gs);
    k->bias_act_grad(gs, m->a4, (size_t)B * 169, 64, 1, 1.0f, G(m, 7));
    layer_conv3x3_backward(k, gs, B, 15, 15, 64, 0, W(m, 6), 64, m->col4 ? m->col4 : m->a3, G(m, 6), gb);
    announce(m, ready, ctx, 6);
    /* ReLU, conv2d_3 */
    k->bias_act_grad(gb, m->a3, (size_t)B * 225, 64, 1, 1.0f, G(m, 5));
    layer_conv3x3_backward(k, gb, B, 15, 15, 32, 1, W(m, 4), 64, m->col3 ? m->col3 : m->p1, G(m, 4), gs);
    announce(m, ready, ctx, 4);
    /* dropout_1, max_pooling2d_1, ReLU, conv2d_2 */
    k->pool_dropout_grad(gs, m->idx1, B, 30, 30, 32, model_dropout_rates[0], gb);
    k->bias_act_grad(gb, m->a2, (size_t)B * 900, 32, 1, 1.0f, G(m, 3));
    layer_conv3x3_backward(k, gb, B, 32, 32, 32, 0, W(m, 2), 32, m->col2 ? m->col2 : m->a1, G(m, 2), gs);
    announce(m, ready, ctx, 2);
    /* ReLU, conv2d_1 (the input needs no gradient) */
    k->bias_act_grad(gs, m->a1, (size_t)B * 1024, 32, 1, 1.0f, G(m, 1));
    layer_conv3x3_backward(k, gs, B, 32, 32, 3, 1, W(m, 0), 32, m->col1 ? m->col1 : m->x, G(m, 0), NULL);
    announce(m, ready, ctx, 0);
}
