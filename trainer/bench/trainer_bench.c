/* trainer-bench: training and inference images/s of cifar-train's compute on the real CIFAR-10 subset, at
 * a given batch size and thread count, measured the way the PyTorch peer (trainer/bench/torch_peer.py) measures:
 * each training step includes drawing the sample order, augmentation (shift + flip), forward, backward
 * and the RMSprop update; inference is the forward pass of the test images, no augmentation.
 *   trainer-bench DATA_DIR THREADS [BATCH] [SECONDS]
 * Prints one line per measurement: "ours train threads=T batch=B: N img/s (S steps in X s)". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "cifar_data.h"
#include "draws.h"
#include "progress.h"
#include "rng.h"
#include "train.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: trainer-bench DATA_DIR THREADS [BATCH] [SECONDS]\n");
        return 2;
    }
    const int threads = atoi(argv[2]), batch = argc > 3 ? atoi(argv[3]) : 32;
    const double seconds = argc > 4 ? atof(argv[4]) : 10.0;
    struct cifar_set train, test;
    char err[1024];
    if (cifar_load_train(argv[1], 0, &train, err, sizeof err) || cifar_load_test(argv[1], 0, &test, err, sizeof err)) {
        fprintf(stderr, "trainer-bench: %s\n", err);
        return 1;
    }
    kernels_cpu.set_threads(threads);
    struct step_core core;
    float *params = malloc(MODEL_NPARAMS * sizeof(float)), *x = malloc((size_t)batch * CIFAR_IMAGE_BYTES * 4);
    uint8_t *labels = malloc(batch);
    uint32_t *order = malloc(train.n * sizeof *order);
    struct augment_params *aug = malloc(batch * sizeof *aug);
    if (step_core_create(&core, &kernels_cpu, batch, 1e-4, 1) != 0)
        return 1;
    model_init_params(params, 1);
    model_set_params(&core.model, params);

    double t0 = 0.0;
    int steps = 0, per_epoch = (int)(train.n / batch);
    for (int s = 0;; s++) {
        if (s == 5)
            t0 = progress_now(); /* after warm-up (oneDNN JIT, first-touch of buffers) */
        const int e = s / per_epoch, i = s % per_epoch;
        if (i == 0)
            draw_epoch_order(order, train.n, 0, rng_key(1, e, 0, 0, RNG_SHUFFLE));
        draw_augment(rng_key(1, e, i, 0, RNG_AUGMENT), batch, 32, 32, aug);
        augment_batch(train.images, order + (size_t)i * batch, batch, aug, x);
        for (int j = 0; j < batch; j++)
            labels[j] = train.labels[order[(size_t)i * batch + j]];
        step_core_step(&core, x, labels, batch, rng_key(1, e, i, 0, RNG_DROPOUT));
        if (s >= 5)
            steps++;
        if (s >= 5 && progress_now() - t0 >= seconds)
            break;
    }
    double dt = progress_now() - t0;
    printf("ours train     threads=%d batch=%d: %7.1f img/s (%d steps in %.1f s)\n", threads, batch,
           steps * batch / dt, steps, dt);

    int images = 0, rounds = 0;
    for (;; rounds++) {
        if (rounds == 1)
            t0 = progress_now(), images = 0;
        for (size_t i = 0; i + batch <= test.n; i += batch) {
            augment_convert(test.images + i * CIFAR_IMAGE_BYTES, (size_t)batch * CIFAR_IMAGE_BYTES, x);
            model_forward(&core.model, x, test.labels + i, batch, 0);
            images += batch;
        }
        if (rounds >= 1 && progress_now() - t0 >= seconds / 2)
            break;
    }
    dt = progress_now() - t0;
    printf("ours inference threads=%d batch=%d: %7.1f img/s (%d images in %.1f s)\n", threads, batch, images / dt,
           images, dt);
    step_core_destroy(&core);
    cifar_free(&train);
    cifar_free(&test);
    free(params), free(x), free(labels), free(order), free(aug);
    return 0;
}
