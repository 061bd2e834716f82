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
#include "input/input_ring.h"
#include "run/progress.h"
#include "core/rng.h"
#include "run/train.h"

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
    struct input_ring ring;
    float *params = malloc(MODEL_NPARAMS * sizeof(float));
    uint8_t *labels = malloc(batch);
    uint32_t *order = malloc(train.n * sizeof *order);
    struct augment_params *aug = malloc(batch * sizeof *aug);
    if (per_epoch < 1 || !params || !labels || !order || !aug || step_core_create(&core, k, batch, 1e-4, 1) != 0 ||
        input_ring_create(&ring, k->input, k, batch) != 0) {
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
            if (i == 0) { /* the trainer's epoch order: Fisher-Yates over rng_below */
                for (size_t j = 0; j < train.n; j++)
                    order[j] = (uint32_t)j;
                for (size_t j = train.n - 1; j > 0; j--) {
                    const size_t r = rng_below(rng_key(1, e, 0, 0, RNG_SHUFFLE), j, (uint32_t)(j + 1));
                    const uint32_t t = order[j];
                    order[j] = order[r];
                    order[r] = t;
                }
            }
            const uint64_t key = rng_key(1, e, i, 0, RNG_AUGMENT);
            for (int j = 0; j < batch; j++) {
                aug[j] = augment_params_from_uniform(rng_uniform(key, 3 * (uint64_t)j), rng_uniform(key, 3 * (uint64_t)j + 1),
                                                     rng_uniform(key, 3 * (uint64_t)j + 2), CIFAR_H, CIFAR_W);
                labels[j] = train.labels[order[(size_t)i * batch + j]];
            }
            if (input_ring_feed(&ring, train.images, order + (size_t)i * batch, labels, batch, aug, &core.model) != 0)
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
    input_ring_destroy(&ring);
    step_core_destroy(&core);
    cuda->close();
    cifar_free(&train);
    free(params), free(labels), free(order), free(aug);
    return 0;
}
