/* evaluate: the test set's loss and accuracy over all ranks, and `cifar-train evaluate` (evaluate.h). */
#include "run/evaluate.h"

#include <stdio.h>

#include "collective.h"
#include "io/keras_h5.h"
#include "run/any_failed.h"
#include "run/run_state.h"
#include "run/train_data.h"

int evaluate_set(struct model *m, struct batch_source *src, const struct cifar_set *test, int batch, double *loss,
                 double *acc, struct progress *bar)
{
    const int rank = coll_rank(), size = coll_size();
    const size_t lo = test->n * rank / size, hi = test->n * (rank + 1) / size;
    double loss_sum;
    int correct;
    model_clear_sums(m);
    for (size_t i = lo; i < hi; i += batch) {
        int B = (int)(hi - i < (size_t)batch ? hi - i : (size_t)batch);
        if (batch_source_load(src, test->images + i * CIFAR_IMAGE_BYTES, NULL, test->labels + i, B, NULL) != 0)
            return -1;
        model_forward(m, B, 0);
        if (bar)
            progress_update(bar, (int)((i + B - lo) * size), NULL, 0);
    }
    model_read_sums(m, &loss_sum, &correct);
    float sums[2] = {(float)loss_sum, (float)correct};
    if (size > 1 && coll_allreduce(sums, sums, 2, COLL_FLOAT32, COLL_SUM) != COLL_OK) {
        fprintf(stderr, "cifar-train: allreduce failed: %s\n", coll_last_error());
        return -1;
    }
    *loss = size > 1 ? sums[0] / (double)test->n : loss_sum / (double)test->n;
    *acc = size > 1 ? sums[1] / (double)test->n : (double)correct / (double)test->n;
    return 0;
}

int evaluate_run(const char *model_path, const struct train_options *o)
{
    struct run r;
    int rc = 1;
    char dir[4096], err[1024];
    if (run_setup(&r, o) != 0 || train_data_dir(o, dir, sizeof dir) != 0)
        goto out;
    int failed = 0;
    if (cifar_load_test(dir, o->limit_test, &r.test, err, sizeof err) != 0 ||
        keras_load(model_path, r.host_params, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: %s\n", err);
        failed = 1;
    }
    if (any_failed(failed))
        goto out;
    model_set_params(&r.core.model, r.host_params);
    double loss, acc;
    if (evaluate_set(&r.core.model, &r.batches, &r.test, o->batch, &loss, &acc, NULL) != 0)
        goto out;
    if (r.rank == 0)
        printf("Test loss: %.8g\nTest accuracy: %.8g\n", loss, acc);
    rc = 0;
out:
    run_free(&r);
    return rc;
}
