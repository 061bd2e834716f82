/* trainer-gpu-bench: training images/s of cifar-train's CUDA table, measured as trainer/bench/torch_peer.py's
 * `gpu` mode measures PyTorch (wall clock over SECONDS after 5 warm-up steps, the device drained before
 * the clock stops):
 *   trainer-gpu-bench DATA_DIR BATCH SECONDS fp32|tf32 train|step
 *   train  end to end: sample order and augmentation draws on the host, raw batches through the input
 *          ring, augmentation, forward, backward and RMSprop on the GPU (what cifar-train does)
 *   step   the step alone, on one batch already in the model's input
 * Prints "ours <mode> batch=B math=M: N img/s (S steps in X s)". Exit 77 where no GPU can be opened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/augment.h"
#include "io/cifar_data.h"
#include "cuda/cuda_plugin.h"
#include "input/batch_source.h"
#include "run/progress.h"
#include "core/rng.h"
#include "run/draws.h"
#include "run/step_core.h"

int main(int argc, char **argv)
{
    if (argc != 6 || (strcmp(argv[4], "fp32") && strcmp(argv[4], "tf32")) ||
        (strcmp(argv[5], "train") && strcmp(argv[5], "step"))) {
        fprintf(stderr, "usage: trainer-gpu-bench DATA_DIR BATCH SECONDS fp32|tf32 train|step\n");
        return 2;
    }
    const int batch = atoi(argv[2]), step_only = !strcmp(argv[5], "step");
    const double seconds = atof(argv[3]);
    char err[1024];
    const struct cuda_plugin *cuda = cuda_plugin_load(err, sizeof err);
    if (!cuda || cuda->device_count(err, sizeof err) < 1 || cuda->open(0, err, sizeof err) != 0) {
        fprintf(stderr, "trainer-gpu-bench: no GPU: %s\n", err);
        return 77;
    }
    cuda->set_tf32(!strcmp(argv[4], "tf32"));
    const struct kernels *k = cuda->table;
    struct cifar_set train;
    if (cifar_load_train(argv[1], 0, &train, err, sizeof err)) {
        fprintf(stderr, "trainer-gpu-bench: %s\n", err);
        return 1;
    }
    const int per_epoch = (int)(train.n / (size_t)batch);
    struct step_core core;
    struct batch_source batches;
    float *params = malloc(MODEL_NPARAMS * sizeof(float));
    uint8_t *labels = malloc(batch);
    uint32_t *order = malloc(train.n * sizeof *order);
    struct augment_params *aug = malloc(batch * sizeof *aug);
    if (per_epoch < 1 || !params || !labels || !order || !aug || step_core_create(&core, k, batch, 1e-4, 1) != 0 ||
        batch_source_create(&batches, &core.model) != 0) {
        fprintf(stderr, "trainer-gpu-bench: out of memory, or fewer than %d training images\n", batch);
        return 1;
    }
    model_init_params(params, 1);
    model_set_params(&core.model, params);

    double t0 = 0.0;
    int steps = 0;
    for (int s = 0;; s++) {
        if (s == 5) {
            k->sync(); /* warm-up done (cuBLAS heuristics, scratch buffers) */
            t0 = progress_now();
        }
        const int e = s / per_epoch, i = s % per_epoch;
        if (!step_only || s == 0) {
            if (i == 0) /* the trainer's draws (draws.h) */
                draw_epoch_order(order, train.n, 0, rng_key(1, e, 0, 0, RNG_SHUFFLE));
            draw_augment(rng_key(1, e, i, 0, RNG_AUGMENT), batch, CIFAR_H, CIFAR_W, aug);
            for (int j = 0; j < batch; j++)
                labels[j] = train.labels[order[(size_t)i * batch + j]];
            if (batch_source_load(&batches, train.images, order + (size_t)i * batch, labels, batch, aug) != 0)
                return 1;
        }
        step_core_step(&core, batch, rng_key(1, e, i, 0, RNG_DROPOUT));
        if (s >= 5)
            steps++;
        if (s >= 5 && progress_now() - t0 >= seconds)
            break;
    }
    k->sync();
    const double dt = progress_now() - t0;
    printf("ours  %-5s batch=%d math=%s: %9.1f img/s (%d steps in %.1f s)\n", argv[5], batch, argv[4],
           steps * batch / dt, steps, dt);
    batch_source_destroy(&batches);
    step_core_destroy(&core);
    cuda->close();
    cifar_free(&train);
    free(params), free(labels), free(order), free(aug);
    return 0;
}
