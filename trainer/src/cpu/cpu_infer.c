#include "cpu/cpu_infer.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_conv.h"
#include "cpu/cpu_dnnl.h"
#include "core/model.h"

/* The chain is a list of steps (a primitive and its arguments) over numbered memories. A memory is either
 * one object shared by every thread (kernels in the primitives' layouts; parameter views whose handle is
 * set once per call) or one object per thread (activations, the image in and the features out, whose
 * handles move from image to image). */
enum { MAX_STEPS = 24, MAX_MEMS = 48, MAX_ARGS = 5, MAX_LANES = 256 };

enum mem_kind {
    MEM_OWN,   /* per thread, allocated by oneDNN: an activation */
    MEM_IMAGE, /* per thread, on the caller's x: one image */
    MEM_OUT,   /* per thread, on the caller's y: one image's features */
    MEM_PARAM, /* shared, on the parameter array at `offset`: a kernel (HWIO) or a bias */
    MEM_WTS,   /* shared, allocated: a kernel in its primitive's layout */
};

struct mem {
    enum mem_kind kind;
    dnnl_memory_desc_t md;
    size_t offset;         /* MEM_PARAM: first float in the parameter array */
    dnnl_memory_t shared;  /* MEM_PARAM, MEM_WTS */
};

struct step {
    dnnl_primitive_t prim;
    int nargs;
    int arg[MAX_ARGS]; /* DNNL_ARG_* */
    int mem[MAX_ARGS];
    dnnl_memory_desc_t scratch; /* the primitive's scratchpad (zero size for reorders) */
};

/* One thread's objects: its stream, its memories and scratchpads, and each step's arguments. */
struct lane {
    dnnl_stream_t stream;
    dnnl_memory_t own[MAX_MEMS]; /* MEM_OWN, MEM_IMAGE, MEM_OUT; NULL for shared ones */
    dnnl_memory_t scratch[MAX_STEPS];
    void *scratch_buf;
    dnnl_exec_arg_t args[MAX_STEPS][MAX_ARGS + 1];
};

static struct {
    int built, rows;
    int nmem, nsteps, nkern;
    struct mem mem[MAX_MEMS];
    struct step step[MAX_STEPS];
    struct step kern[MAX_STEPS]; /* kernels from HWIO to the primitives' layout, when they changed */
    dnnl_exec_arg_t kern_args[MAX_STEPS][MAX_ARGS + 1];
    size_t kern_bytes;           /* of the HWIO kernels that plan.kern reads */
    char *kern_seen;             /* those kernels as the last reorders read them; NULL before the first */
    int image, out;              /* the per-thread input and output memories */
    size_t image_floats, out_floats, scratch_bytes;
    dnnl_stream_t stream;        /* the caller's, for the kernel reorders */
    struct lane *lane[MAX_LANES];
} plan;

static int add_mem(enum mem_kind kind, const dnnl_memory_desc_t *md, size_t offset)
{
    if (plan.nmem == MAX_MEMS)
        cpu_dnnl_check(dnnl_out_of_memory, "cpu_infer: more memories than MAX_MEMS");
    struct mem *m = &plan.mem[plan.nmem];
    *m = (struct mem){.kind = kind, .md = *md, .offset = offset};
    if (kind == MEM_PARAM)
        DNNL_CHECK(dnnl_memory_create(&m->shared, md, cpu_dnnl_engine(), DNNL_MEMORY_NONE));
    else if (kind == MEM_WTS)
        DNNL_CHECK(dnnl_memory_create(&m->shared, md, cpu_dnnl_engine(), DNNL_MEMORY_ALLOCATE));
    return plan.nmem++;
}

/* Appends a step running the primitive of pd on (arg, mem) pairs; takes pd. */
static void add_step(struct step *list, int *n, dnnl_primitive_desc_t pd, int nargs, const int *arg,
                     const int *mem)
{
    if (*n == MAX_STEPS)
        cpu_dnnl_check(dnnl_out_of_memory, "cpu_infer: more steps than MAX_STEPS");
    struct step *s = &list[(*n)++];
    DNNL_CHECK(dnnl_primitive_create(&s->prim, pd));
    s->nargs = nargs;
    memcpy(s->arg, arg, sizeof *arg * (size_t)nargs);
    memcpy(s->mem, mem, sizeof *mem * (size_t)nargs);
    s->scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    const size_t bytes = dnnl_memory_desc_get_size(&s->scratch);
    if (bytes > plan.scratch_bytes)
        plan.scratch_bytes = bytes;
    DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
}

/* The attributes of a primitive: an optional ReLU post-op, and for the steps of the images the lane's
 * scratchpad (oneDNN's own would be shared by the threads running the same primitive). */
static dnnl_primitive_attr_t make_attr(int relu, int lane_scratch)
{
    dnnl_primitive_attr_t attr = cpu_dnnl_attr(relu);
    if (lane_scratch)
        DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    return attr;
}

/* A reorder of memory `from` into a new memory of layout md and kind; returns the new memory. */
static int add_reorder(struct step *list, int *n, int from, enum mem_kind kind, const dnnl_memory_desc_t *md)
{
    const int to = add_mem(kind, md, 0);
    dnnl_primitive_attr_t attr = make_attr(0, list == plan.step);
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, &plan.mem[from].md, cpu_dnnl_engine(), md,
                                                  cpu_dnnl_engine(), attr));
    DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
    add_step(list, n, pd, 2, (const int[]){DNNL_ARG_FROM, DNNL_ARG_TO}, (const int[]){from, to});
    return to;
}

/* One image's activations, in oneDNN's logical order (N, C, H, W) and layout tag. */
static void act_md(dnnl_memory_desc_t *md, int h, int w, int c, dnnl_format_tag_t tag)
{
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(md, 4, (const dnnl_dims_t){1, c, h, w}, dnnl_f32, tag));
}

/* The convolution primitive of layer L: Winograd where both channel counts are multiples of 16 and oneDNN
 * has it for this CPU, else direct (conv2d_1's 3 input channels: Winograd was much slower there). Every
 * layout is the primitive's choice: asked for a given one, oneDNN falls back to its slow reference
 * convolution where no fast kernel takes it (AVX2 and NHWC). Figures: docs/benchmarks.md, "Figures behind
 * code comments". */
static dnnl_primitive_desc_t conv_pd(const struct model_layer *L, int ih, int iw, int ic, int relu)
{
    const int wino = ic % 16 == 0 && L->units % 16 == 0;
    const dnnl_alg_kind_t algs[2] = {wino ? dnnl_convolution_winograd : dnnl_convolution_direct,
                                     dnnl_convolution_direct};
    const dnnl_dims_t strides = {1, 1}, pad = {L->pad, L->pad};
    dnnl_memory_desc_t src, wts, bias, dst;
    act_md(&src, ih, iw, ic, dnnl_format_tag_any);
    act_md(&dst, L->h, L->w, L->c, dnnl_format_tag_any);
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&wts, 4, (const dnnl_dims_t){L->units, ic, L->size, L->size},
                                            dnnl_f32, dnnl_format_tag_any));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bias, 1, (const dnnl_dims_t){L->units}, dnnl_f32, dnnl_x));
    dnnl_primitive_attr_t attr = make_attr(relu, 1);
    dnnl_primitive_desc_t pd = NULL;
    for (int a = 0; a < 2 && !pd; a++) {
        dnnl_convolution_desc_t cd;
        DNNL_CHECK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, algs[a], &src, &wts, &bias,
                                                      &dst, strides, pad, pad));
        if (dnnl_primitive_desc_create(&pd, &cd, attr, cpu_dnnl_engine(), NULL) != dnnl_success)
            pd = NULL;
    }
    DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
    if (!pd)
        cpu_dnnl_check(dnnl_unimplemented, "cpu_infer: convolution primitive");
    return pd;
}

/* Appends layer L (a convolution) reading memory `in`; returns its output memory. */
static int add_conv(const struct model_layer *L, int in, int ih, int iw, int ic, int relu)
{
    dnnl_primitive_desc_t pd = conv_pd(L, ih, iw, ic, relu);
    const dnnl_memory_desc_t *src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    if (!dnnl_memory_desc_equal(src, &plan.mem[in].md))
        in = add_reorder(plan.step, &plan.nsteps, in, MEM_OWN, src);
    /* The kernel: a view of the parameter array (HWIO), reordered (when it changed: kernels_changed) when
     * the primitive wants another layout. */
    const struct model_tensor *k = model_tensor(L->tensor), *b = model_tensor(L->tensor + 1);
    dnnl_memory_desc_t hwio, bias;
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&hwio, 4, (const dnnl_dims_t){L->units, ic, L->size, L->size},
                                            dnnl_f32, dnnl_hwio));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bias, 1, (const dnnl_dims_t){L->units}, dnnl_f32, dnnl_x));
    int wts = add_mem(MEM_PARAM, &hwio, k->offset);
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (!dnnl_memory_desc_equal(want, &hwio))
        wts = add_reorder(plan.kern, &plan.nkern, wts, MEM_WTS, want);
    const int bmem = add_mem(MEM_PARAM, &bias, b->offset);
    const int out = add_mem(MEM_OWN, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), 0);
    add_step(plan.step, &plan.nsteps, pd, 4,
             (const int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST},
             (const int[]){in, wts, bmem, out});
    return out;
}

/* Appends layer L (a max pooling) reading memory `in`; returns its output memory. */
static int add_pool(const struct model_layer *L, int in)
{
    const dnnl_dims_t kernel = {L->size, L->size}, zero = {0, 0};
    dnnl_memory_desc_t dst;
    act_md(&dst, L->h, L->w, L->c, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t d;
    DNNL_CHECK(dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, dnnl_pooling_max, &plan.mem[in].md,
                                                 &dst, kernel, kernel, zero, zero, zero));
    dnnl_primitive_attr_t attr = make_attr(0, 1);
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_primitive_desc_create(&pd, &d, attr, cpu_dnnl_engine(), NULL));
    DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
    const int out = add_mem(MEM_OWN, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), 0);
    add_step(plan.step, &plan.nsteps, pd, 2, (const int[]){DNNL_ARG_SRC, DNNL_ARG_DST}, (const int[]){in, out});
    return out;
}

/* Whether the row-by-row pass runs a convolution of the rows the chain would take on our own Winograd
 * (cpu_conv.h: CPUs with AVX2 and no AVX-512). The chain then has only oneDNN's direct convolutions, and
 * the row-by-row pass is faster, by about 1.7x at one thread with oneDNN held to AVX2 (docs/benchmarks.md,
 * "AVX2 code paths"). */
static int rows_run_own_winograd(void)
{
    int h = MODEL_IN_H, w = MODEL_IN_W, c = MODEL_IN_C;
    for (int i = 0; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i);
        if (L->kind == MODEL_DENSE)
            break;
        if (L->kind == MODEL_CONV && cpu_conv3x3_forward_on_wino(h, w, c, L->pad, L->units, 1))
            return 1;
        h = L->h, w = L->w, c = L->c;
    }
    return 0;
}

/* The chain of the table's rows up to the first one it does not take (the first Dense); none where the
 * row-by-row pass has our Winograd. */
static void build(void)
{
    plan.built = 1;
    if (rows_run_own_winograd())
        return; /* rows() says 0 */
    DNNL_CHECK(dnnl_stream_create(&plan.stream, cpu_dnnl_engine(), dnnl_stream_default_flags));
    int h = MODEL_IN_H, w = MODEL_IN_W, c = MODEL_IN_C;
    dnnl_memory_desc_t md;
    act_md(&md, h, w, c, dnnl_nhwc);
    plan.image = add_mem(MEM_IMAGE, &md, 0);
    plan.image_floats = (size_t)h * w * c;
    int cur = plan.image, i;
    for (i = 0; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i), *next = i + 1 < model_nlayers() ? model_layer(i + 1) : NULL;
        if (L->kind == MODEL_CONV) {
            const int relu = next && next->kind == MODEL_ACTIVATION && strcmp(next->activation, "relu") == 0;
            cur = add_conv(L, cur, h, w, c, relu);
        } else if (L->kind == MODEL_MAXPOOL) {
            cur = add_pool(L, cur);
        } else if (L->kind == MODEL_ACTIVATION) {
            if (strcmp(L->activation, "relu") != 0)
                break;
            continue; /* a convolution's, fused into it (model.c allows it nowhere else before a Dense) */
        } else if (L->kind == MODEL_DROPOUT || L->kind == MODEL_FLATTEN) {
            continue; /* the identity at inference; a no-op on NHWC */
        } else {
            break;
        }
        h = L->h, w = L->w, c = L->c;
    }
    if (cur == plan.image)
        return; /* nothing computed: rows() says 0 */
    act_md(&md, h, w, c, dnnl_nhwc);
    plan.out = add_reorder(plan.step, &plan.nsteps, cur, MEM_OUT, &md);
    plan.out_floats = (size_t)h * w * c;
    plan.rows = i;
    /* The kernels' reorders touch only shared memories: their arguments are fixed. */
    for (int s = 0; s < plan.nkern; s++) {
        const struct step *st = &plan.kern[s];
        for (int a = 0; a < st->nargs; a++)
            plan.kern_args[s][a] = (dnnl_exec_arg_t){st->arg[a], plan.mem[st->mem[a]].shared};
        plan.kern_bytes += dnnl_memory_desc_get_size(&plan.mem[st->mem[0]].md);
    }
}

static int infer_rows(void)
{
    if (!plan.built)
        build();
    return plan.rows;
}

static struct lane *lane_create(void)
{
    struct lane *l = calloc(1, sizeof *l);
    if (!l)
        cpu_dnnl_check(dnnl_out_of_memory, "cpu_infer: a lane");
    DNNL_CHECK(dnnl_stream_create(&l->stream, cpu_dnnl_engine(), dnnl_stream_default_flags));
    for (int m = 0; m < plan.nmem; m++) {
        const struct mem *pm = &plan.mem[m];
        if (pm->kind == MEM_OWN || pm->kind == MEM_IMAGE || pm->kind == MEM_OUT)
            DNNL_CHECK(dnnl_memory_create(&l->own[m], &pm->md, cpu_dnnl_engine(),
                                          pm->kind == MEM_OWN ? DNNL_MEMORY_ALLOCATE : DNNL_MEMORY_NONE));
    }
    l->scratch_buf = aligned_alloc(64, (plan.scratch_bytes + 63) / 64 * 64 + 64);
    if (!l->scratch_buf)
        cpu_dnnl_check(dnnl_out_of_memory, "cpu_infer: a scratchpad");
    for (int s = 0; s < plan.nsteps; s++) {
        const struct step *st = &plan.step[s];
        for (int a = 0; a < st->nargs; a++) {
            const struct mem *pm = &plan.mem[st->mem[a]];
            l->args[s][a] = (dnnl_exec_arg_t){st->arg[a], pm->shared ? pm->shared : l->own[st->mem[a]]};
        }
        DNNL_CHECK(dnnl_memory_create(&l->scratch[s], &st->scratch, cpu_dnnl_engine(), l->scratch_buf));
        l->args[s][st->nargs] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, l->scratch[s]};
    }
    return l;
}

/* Runs steps list[0..n) with their arguments, each followed by `extra` more (the scratchpad). */
static void run_steps(const struct step *list, int n, dnnl_stream_t stream, dnnl_exec_arg_t (*args)[MAX_ARGS + 1],
                      int extra)
{
    for (int s = 0; s < n; s++)
        DNNL_CHECK(dnnl_primitive_execute(list[s].prim, stream, list[s].nargs + extra, args[s]));
    DNNL_CHECK(dnnl_stream_wait(stream));
}

/* Whether the kernels that plan.kern reorders differ from those of the last reorder; remembers them. */
static int kernels_changed(const float *params)
{
    int changed = !plan.kern_seen;
    if (changed && !(plan.kern_seen = malloc(plan.kern_bytes ? plan.kern_bytes : 1)))
        cpu_dnnl_check(dnnl_out_of_memory, "cpu_infer: a copy of the kernels");
    char *seen = plan.kern_seen;
    for (int s = 0; s < plan.nkern; s++) {
        const struct mem *from = &plan.mem[plan.kern[s].mem[0]];
        const size_t bytes = dnnl_memory_desc_get_size(&from->md);
        if (changed || memcmp(seen, params + from->offset, bytes) != 0) {
            memcpy(seen, params + from->offset, bytes);
            changed = 1;
        }
        seen += bytes;
    }
    return changed;
}

static void infer_run(const float *params, const float *x, int B, float *y)
{
    if (infer_rows() == 0)
        abort(); /* model_forward calls run() only when rows() is not 0 */
    for (int m = 0; m < plan.nmem; m++)
        if (plan.mem[m].kind == MEM_PARAM) /* read only: oneDNN's handles are not const */
            DNNL_CHECK(dnnl_memory_set_data_handle(plan.mem[m].shared, (void *)(params + plan.mem[m].offset)));
    int threads = omp_get_max_threads();
    threads = threads < 1 ? 1 : threads > MAX_LANES ? MAX_LANES : threads;
    for (int t = 0; t < threads; t++)
        if (!plan.lane[t])
            plan.lane[t] = lane_create();
    /* Reordering Winograd's kernels (a transform) costs a sixth of a batch's inference, so it happens only
     * when the kernels differ from the ones the last reorder read (a compare of 260 KB). */
    if (kernels_changed(params))
        run_steps(plan.kern, plan.nkern, plan.stream, plan.kern_args, 0);
    /* Each thread takes whole images; oneDNN runs single-threaded inside the parallel region. */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int b = 0; b < B; b++) {
        struct lane *l = plan.lane[omp_get_thread_num()];
        DNNL_CHECK(dnnl_memory_set_data_handle(l->own[plan.image], (void *)(x + (size_t)b * plan.image_floats)));
        DNNL_CHECK(dnnl_memory_set_data_handle(l->own[plan.out], y + (size_t)b * plan.out_floats));
        run_steps(plan.step, plan.nsteps, l->stream, l->args, 1);
    }
}

const struct infer_engine cpu_infer = {.rows = infer_rows, .run = infer_run};
