#include "cpu_conv.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>

/* A oneDNN failure here is a programming error (inconsistent shapes) or memory exhaustion while creating a
 * primitive; neither leaves anything to recover, so it is reported with the call and the process ends. */
static void check(dnnl_status_t st, const char *what)
{
    if (st != dnnl_success) {
        fprintf(stderr, "cifar-train: oneDNN %s failed with status %d\n", what, (int)st);
        abort();
    }
}
#define CHECK(call) check((call), #call)

enum conv_op { OP_FORWARD, OP_GRAD_INPUT, OP_GRAD_KERNEL };

struct conv_shape {
    int op, B, H, W, C, pad, cout, relu;
};

/* One ready-to-run primitive. Memories without a buffer of their own get the caller's pointer per call. */
struct conv_prim {
    struct conv_shape s;
    dnnl_primitive_t prim;
    dnnl_memory_t in, out, bias; /* NHWC activations (forward: x, y; grad input: dy, dx; grad kernel: x, dy) */
    dnnl_memory_t hwio;          /* the model's kernel (or its gradient), HWIO */
    dnnl_memory_t blocked;       /* the same in the primitive's layout, own buffer; NULL when that is HWIO */
    dnnl_primitive_t reorder;    /* hwio -> blocked (forward, grad input) or blocked -> hwio (grad kernel) */
};

enum { CACHE_SLOTS = 64 };
static struct conv_prim cache[CACHE_SLOTS];
static int cache_used, cache_next;
static dnnl_engine_t engine;
static dnnl_stream_t stream;

static void destroy_prim(struct conv_prim *p)
{
    dnnl_primitive_destroy(p->prim);
    dnnl_primitive_destroy(p->reorder);
    dnnl_memory_destroy(p->in);
    dnnl_memory_destroy(p->out);
    dnnl_memory_destroy(p->bias);
    dnnl_memory_destroy(p->hwio);
    dnnl_memory_destroy(p->blocked);
}

static void nhwc_md(dnnl_memory_desc_t *md, int B, int H, int W, int C)
{
    const dnnl_dims_t dims = {B, C, H, W}; /* oneDNN's logical order is always N, C, H, W */
    CHECK(dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, dnnl_nhwc));
}

static void kernel_md(dnnl_memory_desc_t *md, int C, int cout, dnnl_format_tag_t tag)
{
    const dnnl_dims_t dims = {cout, C, 3, 3};
    CHECK(dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, tag));
}

static dnnl_memory_t memory_on(const dnnl_memory_desc_t *md, void *handle)
{
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, md, engine, handle));
    return m;
}

/* The forward primitive descriptor of a shape: the primitive itself for OP_FORWARD, the hint the backward
 * primitives are created from otherwise. */
static dnnl_primitive_desc_t forward_pd(const struct conv_shape *s, const dnnl_memory_desc_t *src,
                                        const dnnl_memory_desc_t *wts, const dnnl_memory_desc_t *dst)
{
    const dnnl_dims_t strides = {1, 1}, padding = {s->pad, s->pad};
    dnnl_memory_desc_t bias;
    const dnnl_dims_t bdims = {s->cout};
    CHECK(dnnl_memory_desc_init_by_tag(&bias, 1, bdims, dnnl_f32, dnnl_x));
    dnnl_convolution_desc_t d;
    CHECK(dnnl_convolution_forward_desc_init(&d, dnnl_forward_training, dnnl_convolution_direct, src, wts, &bias,
                                             dst, strides, padding, padding));
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t ops;
    CHECK(dnnl_primitive_attr_create(&attr));
    CHECK(dnnl_post_ops_create(&ops));
    if (s->relu)
        CHECK(dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
    CHECK(dnnl_primitive_attr_set_post_ops(attr, ops));
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_primitive_desc_create(&pd, &d, attr, engine, NULL));
    dnnl_post_ops_destroy(ops);
    dnnl_primitive_attr_destroy(attr);
    return pd;
}

static void create_prim(struct conv_prim *p, const struct conv_shape *s)
{
    const int OH = s->H + 2 * s->pad - 2, OW = s->W + 2 * s->pad - 2;
    const dnnl_dims_t strides = {1, 1}, padding = {s->pad, s->pad};
    dnnl_memory_desc_t src, dst, any, hwio;
    nhwc_md(&src, s->B, s->H, s->W, s->C);
    nhwc_md(&dst, s->B, OH, OW, s->cout);
    kernel_md(&any, s->C, s->cout, dnnl_format_tag_any);
    kernel_md(&hwio, s->C, s->cout, dnnl_hwio);
    p->s = *s;
    dnnl_primitive_desc_t fwd = forward_pd(s, &src, &any, &dst), pd = fwd;
    dnnl_query_t wts_query = dnnl_query_weights_md;
    if (s->op == OP_GRAD_INPUT) {
        dnnl_convolution_desc_t d;
        CHECK(dnnl_convolution_backward_data_desc_init(&d, dnnl_convolution_direct, &src, &any, &dst, strides,
                                                       padding, padding));
        CHECK(dnnl_primitive_desc_create(&pd, &d, NULL, engine, fwd));
    } else if (s->op == OP_GRAD_KERNEL) {
        dnnl_convolution_desc_t d;
        CHECK(dnnl_convolution_backward_weights_desc_init(&d, dnnl_convolution_direct, &src, &any, NULL, &dst,
                                                          strides, padding, padding));
        CHECK(dnnl_primitive_desc_create(&pd, &d, NULL, engine, fwd));
        wts_query = dnnl_query_diff_weights_md;
    }
    CHECK(dnnl_primitive_create(&p->prim, pd));
    const dnnl_memory_desc_t *wts = dnnl_primitive_desc_query_md(pd, wts_query, 0);
    p->in = memory_on(s->op == OP_GRAD_INPUT ? &dst : &src, DNNL_MEMORY_NONE);
    p->out = memory_on(s->op == OP_FORWARD ? &dst : s->op == OP_GRAD_INPUT ? &src : &dst, DNNL_MEMORY_NONE);
    if (s->op == OP_FORWARD)
        p->bias = memory_on(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), DNNL_MEMORY_NONE);
    p->hwio = memory_on(&hwio, DNNL_MEMORY_NONE);
    if (!dnnl_memory_desc_equal(wts, &hwio)) {
        p->blocked = memory_on(wts, DNNL_MEMORY_ALLOCATE);
        const int to_hwio = s->op == OP_GRAD_KERNEL;
        dnnl_primitive_desc_t rpd;
        CHECK(dnnl_reorder_primitive_desc_create(&rpd, to_hwio ? wts : &hwio, engine, to_hwio ? &hwio : wts,
                                                 engine, NULL));
        CHECK(dnnl_primitive_create(&p->reorder, rpd));
        dnnl_primitive_desc_destroy(rpd);
    }
    if (pd != fwd)
        dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(fwd);
}

static int same_shape(const struct conv_shape *a, const struct conv_shape *b)
{
    return a->op == b->op && a->B == b->B && a->H == b->H && a->W == b->W && a->C == b->C && a->pad == b->pad &&
           a->cout == b->cout && a->relu == b->relu;
}

/* The cached primitive of a shape, created on first use; when the cache is full the oldest entry goes. */
static struct conv_prim *get_prim(const struct conv_shape *s)
{
    if (!engine) {
        CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
        CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    }
    for (int i = 0; i < cache_used; i++)
        if (same_shape(&cache[i].s, s))
            return &cache[i];
    struct conv_prim *p;
    if (cache_used < CACHE_SLOTS) {
        p = &cache[cache_used++];
    } else {
        p = &cache[cache_next];
        cache_next = (cache_next + 1) % CACHE_SLOTS;
        destroy_prim(p);
    }
    *p = (struct conv_prim){0};
    create_prim(p, s);
    return p;
}

static void set_handle(dnnl_memory_t m, const void *ptr)
{
    CHECK(dnnl_memory_set_data_handle(m, (void *)ptr)); /* oneDNN takes void *; inputs are only read */
}

/* hwio <-> the primitive's layout, in the direction create_prim chose; returns the memory to run on. */
static dnnl_memory_t kernel_memory(struct conv_prim *p, const float *hwio)
{
    set_handle(p->hwio, hwio);
    if (!p->blocked)
        return p->hwio;
    if (p->s.op != OP_GRAD_KERNEL) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, p->hwio}, {DNNL_ARG_TO, p->blocked}};
        CHECK(dnnl_primitive_execute(p->reorder, stream, 2, args));
    }
    return p->blocked;
}

void cpu_conv3x3_forward(const float *x, int B, int H, int W, int C, int pad, const float *kernel,
                         const float *bias, int cout, int relu, float *y)
{
    const struct conv_shape s = {OP_FORWARD, B, H, W, C, pad, cout, relu != 0};
    struct conv_prim *p = get_prim(&s);
    set_handle(p->in, x);
    set_handle(p->out, y);
    set_handle(p->bias, bias);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, p->in},
                               {DNNL_ARG_WEIGHTS, kernel_memory(p, kernel)},
                               {DNNL_ARG_BIAS, p->bias},
                               {DNNL_ARG_DST, p->out}};
    CHECK(dnnl_primitive_execute(p->prim, stream, 4, args));
}

void cpu_conv3x3_grad_input(const float *dy, const float *kernel, int B, int H, int W, int C, int pad,
                            int cout, float *dx)
{
    const struct conv_shape s = {OP_GRAD_INPUT, B, H, W, C, pad, cout, 0};
    struct conv_prim *p = get_prim(&s);
    set_handle(p->in, dy);
    set_handle(p->out, dx);
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_DIFF_DST, p->in}, {DNNL_ARG_WEIGHTS, kernel_memory(p, kernel)}, {DNNL_ARG_DIFF_SRC, p->out}};
    CHECK(dnnl_primitive_execute(p->prim, stream, 3, args));
}

void cpu_conv3x3_grad_kernel(const float *x, const float *dy, int B, int H, int W, int C, int pad, int cout,
                             float *dkernel)
{
    const struct conv_shape s = {OP_GRAD_KERNEL, B, H, W, C, pad, cout, 0};
    struct conv_prim *p = get_prim(&s);
    set_handle(p->in, x);
    set_handle(p->out, dy);
    dnnl_memory_t dk = kernel_memory(p, dkernel);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p->in}, {DNNL_ARG_DIFF_DST, p->out}, {DNNL_ARG_DIFF_WEIGHTS, dk}};
    CHECK(dnnl_primitive_execute(p->prim, stream, 3, args));
    if (p->blocked) {
        dnnl_exec_arg_t back[2] = {{DNNL_ARG_FROM, p->blocked}, {DNNL_ARG_TO, p->hwio}};
        CHECK(dnnl_primitive_execute(p->reorder, stream, 2, back));
    }
}
