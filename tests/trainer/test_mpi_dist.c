/* Run under `mpirun -np 2` (tests/trainer/test_mpi.sh). Data-parallel training over libcollective:
 *  1. rank 0's initial weights broadcast: ranks start from different seeds, then agree after it;
 *  2. after 3 steps on different batches per rank every rank holds bit-identical weights;
 *  3. those weights equal a single process that, for each step, averages the gradients of the same two
 *     batches (with the same dropout masks) and applies one update.
 * On one host the ranks train one node-shared copy of the weights, each updating its slice of it, so 2.
 * holds by construction and 3. is what tells; test_mpi.sh runs it again with COLL_SHM=0, where each rank
 * updates its own copy after an MPI allreduce and 2. tells as well. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#include "collective.h"
#include "core/rng.h"
#include "run/step_core.h"

enum { B = 4, STEPS = 3 };

static void batch_of(int rank, int step, float *x, uint8_t *labels)
{
    const uint64_t key = rng_key(9, 0, step, rank, 123);
    for (size_t i = 0; i < (size_t)B * 3072; i++)
        x[i] = rng_uniform(key, i);
    for (int i = 0; i < B; i++)
        labels[i] = (uint8_t)rng_below(key, 1000000 + i, 10);
}

int main(void)
{
    check_mpi_ranks();
    REQUIRE(coll_init(NULL) == COLL_OK, "coll_init: %s", coll_last_error());
    const int rank = coll_rank(), size = coll_size();
    kernels_cpu.set_threads(1);
    float *p = malloc(MODEL_NPARAMS * 4), *all = malloc((size_t)size * MODEL_NPARAMS * 4), *x = malloc(B * 3072 * 4);
    uint8_t labels[B];
    struct step_core c;
    REQUIRE(size == 2, "needs exactly 2 ranks, got %d", size);
    REQUIRE(step_core_create(&c, &kernels_cpu, B, 1e-3, size) == 0, "out of memory");
    model_init_params(p, 100 + rank);
    REQUIRE(coll_broadcast(p, MODEL_NPARAMS, COLL_FLOAT32, 0) == COLL_OK, "broadcast: %s", coll_last_error());
    float *p0 = malloc(MODEL_NPARAMS * 4);
    model_init_params(p0, 100);
    CHECK(memcmp(p, p0, MODEL_NPARAMS * 4) == 0, "weights after broadcast differ from rank 0's");
    model_set_params(&c.model, p);
    for (int s = 0; s < STEPS; s++) {
        batch_of(rank, s, x, labels);
        model_load(&c.model, x, labels, B);
        REQUIRE(step_core_step(&c, B, rng_key(9, 0, s, rank, RNG_DROPOUT)) == 0, "step %d failed", s);
    }
    model_get_params(&c.model, p);
    REQUIRE(coll_allgather(p, all, MODEL_NPARAMS, COLL_FLOAT32) == COLL_OK, "allgather: %s", coll_last_error());
    CHECK(memcmp(all, all + MODEL_NPARAMS, MODEL_NPARAMS * 4) == 0, "ranks hold different weights after %d steps",
          STEPS);

    if (rank == 0) {
        /* The single-process reference: same two batches per step, gradients averaged by hand. */
        struct step_core ref;
        float *g = malloc(MODEL_NPARAMS * 4);
        step_core_create(&ref, &kernels_cpu, B, 1e-3, 1);
        model_set_params(&ref.model, p0);
        for (int s = 0; s < STEPS; s++) {
            memset(g, 0, MODEL_NPARAMS * 4);
            for (int r = 0; r < 2; r++) {
                batch_of(r, s, x, labels);
                model_set_step(&ref.model, rng_key(9, 0, s, r, RNG_DROPOUT), rmsprop_lr_t(&ref.opt));
                model_load(&ref.model, x, labels, B);
                model_forward(&ref.model, B, 1);
                model_backward(&ref.model, B, NULL, NULL);
                for (size_t i = 0; i < MODEL_NPARAMS; i++)
                    g[i] += 0.5f * ref.model.grads[i];
            }
            memcpy(ref.model.grads, g, MODEL_NPARAMS * 4);
            rmsprop_step(&ref.opt, &kernels_cpu, ref.model.params, ref.model.grads, &ref.model.step->lr_t);
        }
        double worst = 0, scale = 0;
        for (size_t i = 0; i < MODEL_NPARAMS; i++) {
            worst = check_max(worst, fabs((double)ref.model.params[i] - p[i]));
            scale = check_max(scale, fabs((double)ref.model.params[i] - p0[i]));
        }
        CHECK(worst <= 1e-4 * scale,
              "the 2-rank run differs from the averaged single-process run: max |diff| %.3e (update size %.3e)", worst,
              scale);
        step_core_destroy(&ref);
        free(g);
    }
    int total = (int)check_failures(); /* every rank fails when one did */
    coll_allreduce(&total, &total, 1, COLL_INT32, COLL_SUM);
    step_core_destroy(&c);
    free(p), free(p0), free(all), free(x);
    coll_finalize();
    const int rc = check_exit("test_mpi_dist");
    return total ? 1 : rc;
}
