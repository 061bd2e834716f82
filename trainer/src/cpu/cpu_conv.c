#include "cpu/cpu_conv.h"

#include <oneapi/dnnl/dnnl.h>

#include "cpu/cpu_dnnl.h"
#include "cpu/cpu_wino.h"

enum conv_op { OP_FORWARD, OP_GRAD_INPUT, OP_GRAD_KERNEL };

struct conv_shape {
    int op, B, H, W, C, pad, cout, relu;
};

/* A tensor as the caller holds it (NHWC activations, HWIO kernel: `user`, pointed at the caller's buffer on
 * each call) and, when the primitive wants another layout, the same tensor in that layout (`prim`, own
 * buffer) with the reorder between them (user -> prim for inputs, prim -> user for outputs). */
struct tensor {
    dnnl_memory_t user, prim;
    dnnl_primitive_t reorder;
    int arg; /* DNNL_ARG_* of the primitive */
};

/* One ready-to-run primitive: inputs t[0..n_in), output t[n_in]. Forward: x, kernel, bias -> y; grad
 * input: dy, kernel -> dx; grad kernel: x, dy -> dkernel. Or, when `own`, no primitive: the shape runs
 * on cpu_wino.h. */
struct conv_prim {
    struct conv_shape s;
    int own;
    dnnl_primitive_t prim;
    int n_in;
    struct tensor t[4];
};

enum { CACHE_SLOTS = 64 };
static struct conv_prim cache[CACHE_SLOTS];
static int cache_used, cache_next;
static dnnl_engine_t engine; /* cpu_dnnl_engine() */
static dnnl_stream_t stream;

static void destroy_prim(struct conv_prim *p)
{
    if (p->own)
        return;
    dnnl_primitive_destroy(p->prim);
    for (int i = 0; i <= p->n_in; i++) {
        dnnl_memory_destroy(p->t[i].user);
        dnnl_memory_destroy(p->t[i].prim);
        dnnl_primitive_destroy(p->t[i].reorder);
    }
}

static void nhwc_md(dnnl_memory_desc_t *md, int B, int H, int W, int C, dnnl_format_tag_t tag)
{
    const dnnl_dims_t dims = {B, C, H, W}; /* oneDNN's logical order is always N, C, H, W */
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, tag));
}

static void kernel_md(dnnl_memory_desc_t *md, int C, int cout, dnnl_format_tag_t tag)
{
    const dnnl_dims_t dims = {cout, C, 3, 3};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, tag));
}

/* The descriptors of one attempt: the algorithm and the layout of activations the primitive may choose. */
struct conv_descs {
    dnnl_alg_kind_t alg;
    dnnl_memory_desc_t src, dst, wts, bias;
};

static void make_descs(struct conv_descs *d, const struct conv_shape *s, dnnl_alg_kind_t alg,
                       dnnl_format_tag_t act_tag)
{
    const int OH = s->H + 2 * s->pad - 2, OW = s->W + 2 * s->pad - 2;
    const dnnl_dims_t bdims = {s->cout};
    d->alg = alg;
    nhwc_md(&d->src, s->B, s->H, s->W, s->C, act_tag);
    nhwc_md(&d->dst, s->B, OH, OW, s->cout, act_tag);
    kernel_md(&d->wts, s->C, s->cout, dnnl_format_tag_any);
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&d->bias, 1, bdims, dnnl_f32, dnnl_x));
}

/* The primitive descriptor of s->op with descriptors d, or NULL when oneDNN has no implementation. */
static dnnl_primitive_desc_t op_pd(const struct conv_shape *s, const struct conv_descs *d)
{
    const dnnl_dims_t strides = {1, 1}, padding = {s->pad, s->pad};
    dnnl_convolution_desc_t fd;
    DNNL_CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, d->alg, &d->src, &d->wts, &d->bias,
                                                  &d->dst, strides, padding, padding));
    dnnl_primitive_attr_t attr = cpu_dnnl_attr(s->relu);
    dnnl_primitive_desc_t fwd = NULL, pd = NULL;
    dnnl_status_t st = dnnl_primitive_desc_create(&fwd, &fd, attr, engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success || s->op == OP_FORWARD)
        return st == dnnl_success ? fwd : NULL;
    /* Backward primitives are created with the forward one as the hint, as oneDNN requires. */
    dnnl_convolution_desc_t bd;
    if (s->op == OP_GRAD_INPUT)
        DNNL_CHECK(dnnl_convolution_backward_data_desc_init(&bd, d->alg, &d->src, &d->wts, &d->dst, strides, padding,
                                                            padding));
    else
        DNNL_CHECK(dnnl_convolution_backward_weights_desc_init(&bd, d->alg, &d->src, &d->wts, NULL, &d->dst, strides,
                                                               padding, padding));
    if (dnnl_primitive_desc_create(&pd, &bd, NULL, engine, fwd) != dnnl_success)
        pd = NULL;
    dnnl_primitive_desc_destroy(fwd);
    return pd;
}

static dnnl_memory_t memory_on(const dnnl_memory_desc_t *md, void *handle)
{
    dnnl_memory_t m;
    DNNL_CHECK(dnnl_memory_create(&m, md, engine, handle));
    return m;
}

/* Tensor t in the caller's layout `user`; the primitive's layout is what pd says for query/index. */
static void bind_tensor(struct tensor *t, int arg, const dnnl_memory_desc_t *user, dnnl_primitive_desc_t pd,
                        dnnl_query_t query, int index, int is_output)
{
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, query, index);
    t->arg = arg;
    t->user = memory_on(user, DNNL_MEMORY_NONE);
    if (dnnl_memory_desc_equal(want, user))
        return;
    t->prim = memory_on(want, DNNL_MEMORY_ALLOCATE);
    dnnl_primitive_desc_t rpd;
    DNNL_CHECK(dnnl_reorder_primitive_desc_create(&rpd, is_output ? want : user, engine, is_output ? user : want,
                                                  engine, NULL));
    DNNL_CHECK(dnnl_primitive_create(&t->reorder, rpd));
    dnnl_primitive_desc_destroy(rpd);
}

/* Whether our AVX2 Winograd (cpu_wino.h) takes shape s: forward and input-gradient passes whose channel
 * counts it takes, on a CPU that has AVX2 and FMA. */
static int own_wino_takes(const struct conv_shape *s)
{
    static int supported = -1;
    if (supported < 0)
        supported = cpu_wino_supported();
    if (!supported || s->op == OP_GRAD_KERNEL)
        return 0;
    return s->op == OP_FORWARD ? cpu_wino_shape_ok(s->C, s->cout) : cpu_wino_shape_ok(s->cout, s->C);
}

/* The one rule for which code runs shape s: 1 when it is cpu_wino, else 0 with *pd the oneDNN primitive
 * descriptor to use (the caller destroys it), d its descriptors.
 *
 * Winograd F(4x4, 3x3) does the forward and input-gradient passes of the layers whose channel counts are
 * multiples of 16 faster than the direct NHWC convolutions (docs/benchmarks.md). oneDNN's (jit_wino_4x3)
 * exists only for its blocked layout and AVX-512, and is faster even counting the reorders of activations
 * to and from that layout. Where oneDNN has none (AVX2 CPUs), ours runs (cpu_wino.h), on NHWC; elsewhere
 * (conv2d_1's 3 input channels, CPUs without AVX2) the direct convolution on NHWC. The choice is the
 * libraries' and the CPU's answer for each shape. The kernel gradient is direct everywhere: oneDNN's
 * Winograd one was slower than the direct one on NHWC (conv2d_2's backward by about a fifth at one thread;
 * docs/benchmarks.md, "where the time goes"), which also spares reordering the layer's input. */
static int choose(const struct conv_shape *s, struct conv_descs *d, dnnl_primitive_desc_t *pd)
{
    *pd = NULL;
    if (s->op != OP_GRAD_KERNEL && s->C % 16 == 0 && s->cout % 16 == 0) {
        make_descs(d, s, dnnl_convolution_winograd, dnnl_format_tag_any);
        *pd = op_pd(s, d);
    }
    if (!*pd && own_wino_takes(s))
        return 1;
    if (!*pd) {
        make_descs(d, s, dnnl_convolution_direct, dnnl_nhwc);
        if (!(*pd = op_pd(s, d)))
            cpu_dnnl_check(dnnl_unimplemented, "convolution primitive");
    }
    return 0;
}

static void create_prim(struct conv_prim *p, const struct conv_shape *s)
{
    struct conv_descs d;
    dnnl_primitive_desc_t pd;
    p->s = *s;
    if ((p->own = choose(s, &d, &pd)))
        return;
    dnnl_memory_desc_t src, dst, hwio;
    const int OH = s->H + 2 * s->pad - 2, OW = s->W + 2 * s->pad - 2;
    nhwc_md(&src, s->B, s->H, s->W, s->C, dnnl_nhwc);
    nhwc_md(&dst, s->B, OH, OW, s->cout, dnnl_nhwc);
    kernel_md(&hwio, s->C, s->cout, dnnl_hwio);
    DNNL_CHECK(dnnl_primitive_create(&p->prim, pd));
    struct tensor *t = p->t;
    if (s->op == OP_FORWARD) {
        p->n_in = 3;
        bind_tensor(&t[0], DNNL_ARG_SRC, &src, pd, dnnl_query_src_md, 0, 0);
        bind_tensor(&t[1], DNNL_ARG_WEIGHTS, &hwio, pd, dnnl_query_weights_md, 0, 0);
        bind_tensor(&t[2], DNNL_ARG_BIAS, &d.bias, pd, dnnl_query_weights_md, 1, 0);
        bind_tensor(&t[3], DNNL_ARG_DST, &dst, pd, dnnl_query_dst_md, 0, 1);
    } else if (s->op == OP_GRAD_INPUT) {
        p->n_in = 2;
        bind_tensor(&t[0], DNNL_ARG_DIFF_DST, &dst, pd, dnnl_query_diff_dst_md, 0, 0);
        bind_tensor(&t[1], DNNL_ARG_WEIGHTS, &hwio, pd, dnnl_query_weights_md, 0, 0);
        bind_tensor(&t[2], DNNL_ARG_DIFF_SRC, &src, pd, dnnl_query_diff_src_md, 0, 1);
    } else {
        p->n_in = 2;
        bind_tensor(&t[0], DNNL_ARG_SRC, &src, pd, dnnl_query_src_md, 0, 0);
        bind_tensor(&t[1], DNNL_ARG_DIFF_DST, &dst, pd, dnnl_query_diff_dst_md, 0, 0);
        bind_tensor(&t[2], DNNL_ARG_DIFF_WEIGHTS, &hwio, pd, dnnl_query_diff_weights_md, 0, 1);
    }
    dnnl_primitive_desc_destroy(pd);
}

static int same_shape(const struct conv_shape *a, const struct conv_shape *b)
{
    return a->op == b->op && a->B == b->B && a->H == b->H && a->W == b->W && a->C == b->C && a->pad == b->pad &&
           a->cout == b->cout && a->relu == b->relu;
}

/* The cached primitive of a shape, created on first use; when the cache is full the oldest entry goes. */
static void ensure_engine(void)
{
    if (!engine) {
        engine = cpu_dnnl_engine();
        DNNL_CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    }
}

static struct conv_prim *get_prim(const struct conv_shape *s)
{
    ensure_engine();
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

static void reorder(dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to)
{
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    DNNL_CHECK(dnnl_primitive_execute(r, stream, 2, args));
}

/* Runs p on the caller's buffers ptr[0..n_in] (inputs, then the output). */
static void run(struct conv_prim *p, const void *const *ptr)
{
    dnnl_exec_arg_t args[4];
    const int n = p->n_in + 1;
    for (int i = 0; i < n; i++) {
        struct tensor *t = &p->t[i];
        DNNL_CHECK(dnnl_memory_set_data_handle(t->user, (void *)ptr[i])); /* inputs are only read */
        if (t->prim && i < p->n_in)
            reorder(t->reorder, t->user, t->prim);
        args[i] = (dnnl_exec_arg_t){t->arg, t->prim ? t->prim : t->user};
    }
    DNNL_CHECK(dnnl_primitive_execute(p->prim, stream, n, args));
    struct tensor *out = &p->t[p->n_in];
    if (out->prim)
        reorder(out->reorder, out->prim, out->user);
}

void cpu_conv3x3_forward(const float *x, int B, int H, int W, int C, int pad, const float *kernel,
                         const float *bias, int cout, int relu, float *y)
{
    const struct conv_shape s = {OP_FORWARD, B, H, W, C, pad, cout, relu != 0};
    struct conv_prim *p = get_prim(&s);
    if (p->own) {
        cpu_wino_forward(x, B, H, W, C, pad, kernel, bias, cout, relu, y);
        return;
    }
    const void *ptr[4] = {x, kernel, bias, y};
    run(p, ptr);
}

int cpu_conv3x3_forward_on_wino(int H, int W, int C, int pad, int cout, int relu)
{
    /* The rule's answer without creating (JIT-compiling) a primitive or taking a cache slot; the batch
     * size does not enter it. */
    const struct conv_shape s = {OP_FORWARD, 1, H, W, C, pad, cout, relu != 0};
    struct conv_descs d;
    dnnl_primitive_desc_t pd;
    ensure_engine();
    const int own = choose(&s, &d, &pd);
    dnnl_primitive_desc_destroy(pd);
    return own;
}

void cpu_conv3x3_grad_input(const float *dy, const float *kernel, int B, int H, int W, int C, int pad,
                            int cout, float *dx)
{
    const struct conv_shape s = {OP_GRAD_INPUT, B, H, W, C, pad, cout, 0};
    struct conv_prim *p = get_prim(&s);
    if (p->own) {
        cpu_wino_grad_input(dy, kernel, B, H, W, C, pad, cout, dx);
        return;
    }
    const void *ptr[3] = {dy, kernel, dx};
    run(p, ptr);
}

void cpu_conv3x3_grad_kernel(const float *x, const float *dy, int B, int H, int W, int C, int pad, int cout,
                             float *dkernel)
{
    const struct conv_shape s = {OP_GRAD_KERNEL, B, H, W, C, pad, cout, 0};
    const void *ptr[3] = {x, dy, dkernel};
    run(get_prim(&s), ptr);
}
