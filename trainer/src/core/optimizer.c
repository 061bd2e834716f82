#include "core/optimizer.h"

#include <string.h>

int rmsprop_create(struct rmsprop *o, const struct kernels *k, size_t n, double lr, double rho, double decay,
                   double epsilon, float *acc)
{
    memset(o, 0, sizeof *o);
    o->lr = lr;
    o->rho = rho;
    o->decay = decay;
    o->epsilon = epsilon;
    o->n = n;
    o->acc_lent = acc != NULL;
    o->acc = acc ? acc : k->alloc(n * sizeof(float));
    return o->acc ? 0 : -1;
}

void rmsprop_destroy(struct rmsprop *o, const struct kernels *k)
{
    if (!o->acc_lent)
        k->release(o->acc);
    memset(o, 0, sizeof *o);
}

float rmsprop_lr_t(const struct rmsprop *o)
{
    /* Keras: lr * (1. / (1. + decay * K.cast(iterations, 'float32'))), all float32. */
    const float lr = (float)o->lr, decay = (float)o->decay, it = (float)o->iterations;
    return lr * (1.0f / (1.0f + decay * it));
}

void rmsprop_queue(const struct rmsprop *o, const struct kernels *k, float *params, const float *grads,
                   const float *lr_t)
{
    k->rmsprop(params, grads, o->acc, o->n, lr_t, (float)o->rho, (float)o->epsilon);
}

void rmsprop_apply(const struct rmsprop *o, float *p, float *a, const float *g, size_t n, float lr_t)
{
    const float rho = (float)o->rho, one_minus_rho = 1.0f - rho, eps = (float)o->epsilon;
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        rmsprop_update_one(&p[i], &a[i], g[i], lr_t, rho, one_minus_rho, eps);
}

void rmsprop_step(struct rmsprop *o, const struct kernels *k, float *params, const float *grads, const float *lr_t)
{
    rmsprop_queue(o, k, params, grads, lr_t);
    o->iterations++;
}
