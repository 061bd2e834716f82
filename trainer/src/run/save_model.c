/* save_model: the step core's state into a Keras file, finite values only (save_model.h). */
#include "run/save_model.h"

#include <math.h>
#include <stdio.h>

#include "run/train.h"

/* The first non-finite value of v (MODEL_NPARAMS floats in model_tensor() layout): its tensor, or NULL. */
static const struct model_tensor *nonfinite_tensor(const float *v, size_t *index)
{
    for (int t = 0; t < model_ntensors(); t++) {
        const struct model_tensor *mt = model_tensor(t);
        for (size_t i = 0; i < mt->count; i++)
            if (!isfinite(v[mt->offset + i])) {
                *index = i;
                return mt;
            }
    }
    return NULL;
}

int save_model(const char *path, const char *where, const struct step_core *c, float *host_params, float *host_acc,
               const struct keras_train_state *st)
{
    char err[1024];
    size_t i;
    model_get_params(&c->model, host_params);
    c->model.k->download(host_acc, c->opt.acc, MODEL_NPARAMS * sizeof(float));
    const struct model_tensor *w = nonfinite_tensor(host_params, &i), *t = w ? w : nonfinite_tensor(host_acc, &i);
    if (t) {
        fprintf(stderr, "cifar-train: %s: non-finite %s in %s/%s (index %zu): training stopped, %s not written\n",
                where, w ? "weight" : "RMSprop accumulator", t->layer, t->weight, i, path);
        return TRAIN_EXIT_NONFINITE;
    }
    if (keras_save(path, host_params, host_acc, st, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: %s\n", err);
        return -1;
    }
    return 0;
}
