/* trainer-bench: training and inference images/s of cifar-train's compute on the real CIFAR-10 subset, at
 * a given batch size and thread count, measured the way the PyTorch peer (trainer/bench/torch_peer.py) measures:
 * each training step includes drawing the sample order, augmentation (shift + flip), forward, backward
 * and the RMSprop update; inference is the forward pass of the test images, no augmentation.
 *   trainer-bench DATA_DIR THREADS [BATCH] [SECONDS] [LAYER_SECONDS]
 * Prints one line per measurement: "ours train threads=T batch=B: N img/s (S steps in X s)", then the
 * process's peak RSS. With LAYER_SECONDS > 0 a second training loop of that length (same warm-up, same
 * steps) times each part of a step, printed as "ours layer threads=T batch=B: NAME FWD_MS BWD_MS MFLOP"
 * per batch step: the batch (order + augmentation), each layer with what is fused into it (model.h: a
 * Conv2D with its ReLU, a pooling with its dropout...), the loss, and the update (the rest of the step:
 * copying the batch in, the step's values, RMSprop). MFLOP is per image, forward + backward, of the
 * convolutions and dense products (122.7 in all). The timed loop of the throughput line runs untraced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "input/augment.h"
#include "cpu/cpu_conv.h"
#include "cpu/cpu_infer.h"
#include "io/cifar_data.h"
#include "run/draws.h"
#include "run/progress.h"
#include "core/rng.h"
#include "run/step_core.h"

enum { WARMUP_STEPS = 5, MAX_GROUPS = 32 };

/* Per-step times of the parts of a training step, summed over the timed steps. A group is a table row
 * that computes (Conv2D, Dense, MaxPooling2D; the final softmax is "loss") with the rows fused into it. */
struct profile {
    int ngroups;
    int *group_of;               /* table row -> group */
    const char *name[MAX_GROUPS];
    double mflop[MAX_GROUPS];    /* per image, forward + backward */
    double mflop_forward;        /* per image, forward only (inference) */
    double fwd[MAX_GROUPS], bwd[MAX_GROUPS];
    double batch, step;          /* seconds: order + augmentation; the whole step_core_step */
    int cur, cur_bwd;            /* the group being timed, -1 none */
    double last;
};

static void profile_init(struct profile *p)
{
    memset(p, 0, sizeof *p);
    p->group_of = calloc((size_t)model_nlayers(), sizeof *p->group_of);
    if (!p->group_of)
        abort();
    p->cur = -1;
    int in_c = MODEL_IN_C;
    for (int i = 0; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i);
        const int starts = L->kind == MODEL_CONV || L->kind == MODEL_DENSE || L->kind == MODEL_MAXPOOL ||
                           (L->kind == MODEL_ACTIVATION && strcmp(L->activation, "relu") != 0);
        if (starts && p->ngroups < MAX_GROUPS) {
            p->name[p->ngroups] = L->kind == MODEL_ACTIVATION ? "loss" : L->name;
            p->ngroups++;
        }
        p->group_of[i] = p->ngroups - 1;
        /* Multiply-adds of the forward product, 2 FLOP each; backward does two such products (kernel and
         * input gradient), except for the first layer, whose input needs no gradient (model_backward). */
        double fwd = 0.0;
        if (L->kind == MODEL_CONV)
            fwd = 2.0 * L->h * L->w * (double)(L->size * L->size) * in_c * L->units;
        else if (L->kind == MODEL_DENSE)
            fwd = 2.0 * in_c * L->units;
        p->mflop[p->ngroups - 1] += 1e-6 * fwd * (i == 0 ? 2.0 : 3.0);
        p->mflop_forward += 1e-6 * fwd;
        in_c = L->c;
    }
}

static void profile_trace(void *ctx, int layer, int backward)
{
    struct profile *p = ctx;
    const double t = progress_now();
    if (p->cur >= 0)
        (p->cur_bwd ? p->bwd : p->fwd)[p->cur] += t - p->last;
    p->cur = layer >= 0 ? p->group_of[layer] : -1;
    p->cur_bwd = backward;
    p->last = t;
}

static void profile_clear(struct profile *p)
{
    memset(p->fwd, 0, sizeof p->fwd);
    memset(p->bwd, 0, sizeof p->bwd);
    p->batch = p->step = 0.0;
}

static void profile_print(const struct profile *p, int threads, int batch, int steps)
{
    const double ms = 1e3 / steps;
    double layers = 0.0;
    printf("ours layer threads=%d batch=%d: batch %.3f - -\n", threads, batch, p->batch * ms);
    for (int g = 0; g < p->ngroups; g++) {
        printf("ours layer threads=%d batch=%d: %s %.3f %.3f %.2f\n", threads, batch, p->name[g], p->fwd[g] * ms,
               p->bwd[g] * ms, p->mflop[g]);
        layers += p->fwd[g] + p->bwd[g];
    }
    printf("ours layer threads=%d batch=%d: update %.3f - -\n", threads, batch, (p->step - layers) * ms);
}

struct bench {
    const struct cifar_set *train;
    struct step_core core;
    float *x;
    uint8_t *labels;
    uint32_t *order;
    struct augment_params *aug;
    int batch, s; /* s: steps taken so far, over all loops (the next step's batch) */
};

/* CPU time of all the process's threads, seconds: on a machine shared with other jobs the wall time of a
 * loop stretches, its CPU time much less (spinning threads count, as they should). */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* WARMUP_STEPS steps, then steps for `seconds`; returns the timed steps, their wall time in *dt and CPU
 * time in *cpu. With prof, each part of a timed step is added to it. */
static int train_loop(struct bench *b, double seconds, struct profile *prof, double *dt, double *cpu)
{
    const int batch = b->batch, per_epoch = (int)(b->train->n / (size_t)batch);
    b->core.model.trace = prof ? profile_trace : NULL;
    b->core.model.trace_ctx = prof;
    double t0 = 0.0, c0 = 0.0;
    int steps = 0;
    for (int n = 0;; n++, b->s++) {
        if (n == WARMUP_STEPS) {
            t0 = progress_now(); /* after warm-up (oneDNN JIT, first-touch of buffers) */
            c0 = cpu_seconds();
            if (prof)
                profile_clear(prof);
        }
        const double ta = progress_now();
        const int e = b->s / per_epoch, i = b->s % per_epoch;
        if (i == 0)
            draw_epoch_order(b->order, b->train->n, 0, rng_key(1, e, 0, 0, RNG_SHUFFLE));
        draw_augment(rng_key(1, e, i, 0, RNG_AUGMENT), batch, 32, 32, b->aug);
        augment_batch(b->train->images, b->order + (size_t)i * batch, batch, b->aug, b->x);
        for (int j = 0; j < batch; j++)
            b->labels[j] = b->train->labels[b->order[(size_t)i * batch + j]];
        const double tb = progress_now();
        model_load(&b->core.model, b->x, b->labels, batch);
        step_core_step(&b->core, batch, rng_key(1, e, i, 0, RNG_DROPOUT));
        const double tc = progress_now();
        if (prof) {
            prof->batch += tb - ta;
            prof->step += tc - tb;
        }
        if (n >= WARMUP_STEPS)
            steps++;
        if (n >= WARMUP_STEPS && tc - t0 >= seconds) {
            *dt = tc - t0;
            *cpu = cpu_seconds() - c0;
            break;
        }
    }
    b->core.model.trace = NULL;
    return steps;
}

/* Which code runs the convolutions' forward and input-gradient passes, and inference, on this CPU (chosen
 * at run time from the CPU's features and what oneDNN offers for each shape: cpu_conv.h, cpu_infer.h). */
static void print_paths(void)
{
    printf("ours paths:");
    int h = MODEL_IN_H, w = MODEL_IN_W, c = MODEL_IN_C;
    for (int i = 0; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i);
        if (L->kind == MODEL_CONV)
            printf(" %s %s;", L->name,
                   cpu_conv3x3_forward_on_wino(h, w, c, L->pad, L->units, 1) ? "own AVX2 Winograd" : "oneDNN");
        h = L->h, w = L->w, c = L->c;
    }
    printf(" inference %s\n", cpu_infer.rows() ? "image by image (cpu_infer's oneDNN chain) up to the Flatten" : "row by row");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: trainer-bench DATA_DIR THREADS [BATCH] [SECONDS] [LAYER_SECONDS]\n");
        return 2;
    }
    const int threads = atoi(argv[2]), batch = argc > 3 ? atoi(argv[3]) : 32;
    const double seconds = argc > 4 ? atof(argv[4]) : 10.0, layer_seconds = argc > 5 ? atof(argv[5]) : 0.0;
    struct cifar_set train, test;
    char err[1024];
    if (cifar_load_train(argv[1], 0, &train, err, sizeof err) || cifar_load_test(argv[1], 0, &test, err, sizeof err)) {
        fprintf(stderr, "trainer-bench: %s\n", err);
        return 1;
    }
    kernels_cpu.set_threads(threads);
    struct bench b = {.train = &train, .batch = batch};
    float *params = malloc(MODEL_NPARAMS * sizeof(float));
    b.x = malloc((size_t)batch * CIFAR_IMAGE_BYTES * 4);
    b.labels = malloc(batch);
    b.order = malloc(train.n * sizeof *b.order);
    b.aug = malloc(batch * sizeof *b.aug);
    if (!params || !b.x || !b.labels || !b.order || !b.aug || step_core_create(&b.core, &kernels_cpu, batch, 1e-4, 1) != 0)
        return 1;
    model_init_params(params, 1);
    model_set_params(&b.core.model, params);

    struct profile prof;
    profile_init(&prof);
    double train_mflop = 0.0;
    for (int g = 0; g < prof.ngroups; g++)
        train_mflop += prof.mflop[g];
    printf("ours mflop per image: train %.2f inference %.2f (convolutions and dense products, 2 per multiply-add)\n",
           train_mflop, prof.mflop_forward);
    print_paths();

    double dt, cpu;
    int steps = train_loop(&b, seconds, NULL, &dt, &cpu);
    printf("ours train     threads=%d batch=%d: %7.1f img/s (%d steps in %.1f s, %.2f CPU ms per step)\n", threads,
           batch, steps * batch / dt, steps, dt, 1e3 * cpu / steps);

    int images = 0;
    double t0 = 0.0;
    for (int rounds = 0;; rounds++) {
        if (rounds == 1)
            t0 = progress_now(), images = 0;
        for (size_t i = 0; i + batch <= test.n; i += batch) {
            augment_convert(test.images + i * CIFAR_IMAGE_BYTES, (size_t)batch * CIFAR_IMAGE_BYTES, b.x);
            model_load(&b.core.model, b.x, test.labels + i, batch);
            model_forward(&b.core.model, batch, 0);
            images += batch;
        }
        if (rounds >= 1 && progress_now() - t0 >= seconds / 2)
            break;
    }
    dt = progress_now() - t0;
    printf("ours inference threads=%d batch=%d: %7.1f img/s (%d images in %.1f s)\n", threads, batch, images / dt,
           images, dt);

    if (layer_seconds > 0.0) {
        steps = train_loop(&b, layer_seconds, &prof, &dt, &cpu);
        profile_print(&prof, threads, batch, steps);
    }
    free(prof.group_of);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("ours rss threads=%d batch=%d: %.1f MiB peak resident (getrusage ru_maxrss)\n", threads, batch,
           ru.ru_maxrss / 1024.0);
    step_core_destroy(&b.core);
    cifar_free(&train);
    cifar_free(&test);
    free(params), free(b.x), free(b.labels), free(b.order), free(b.aug);
    return 0;
}
