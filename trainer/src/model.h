/* model: the tutorial's CIFAR-10 network (trainer.md), its parameters, and one training step's forward
 * and backward passes over the kernels of one device.
 *
 *   conv2d_1  3x3 same  3->32  + ReLU      32x32x32
 *   conv2d_2  3x3 valid 32->32 + ReLU      30x30x32   max_pooling2d_1 -> dropout_1 (0.25)  15x15x32
 *   conv2d_3  3x3 same  32->64 + ReLU      15x15x64
 *   conv2d_4  3x3 valid 64->64 + ReLU      13x13x64   max_pooling2d_2 -> dropout_2 (0.25)  6x6x64
 *   flatten_1 -> dense_1 2304->512 + ReLU -> dropout_3 (0.5) -> dense_2 512->10 + softmax
 *
 * Parameters live in ONE array of MODEL_NPARAMS floats in Keras order and layout, as keras_tensors[]
 * (keras_h5.h) describes it: for each of conv2d_1..4, dense_1, dense_2 the kernel (HWIO, resp. in x out),
 * then the bias.
 * The kernels compute directly in that layout, so no conversion happens anywhere. Gradients use the same
 * layout in one array of the same size, so a single fused allreduce averages them all. */
#ifndef TRAINER_MODEL_H
#define TRAINER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

#define MODEL_NPARAMS 1250858 /* == KERAS_N_PARAMS */
#define MODEL_CLASSES 10
#define MODEL_IN_H 32
#define MODEL_IN_W 32
#define MODEL_IN_C 3

/* Dropout rates of dropout_1..3. */
extern const float model_dropout_rates[3];

/* What changes from one training step to the next, kept in the table's memory (kernels.h) and written
 * by one upload before each step (model_set_step), so that a replayed CUDA graph reads each step's. */
struct step_values {
    uint64_t dropout[3]; /* dropout_1..3's keys: rng_u64(dropout_key, i) */
    float lr_t;          /* the learning rate of this step's update (rmsprop_lr_t) */
};

/* Keras's glorot_uniform kernels and zero biases, from (seed) with the counter-based rng; host memory. */
void model_init_params(float *params, uint64_t seed);

struct model {
    const struct kernels *k;
    int max_batch;
    float *params; /* device, MODEL_NPARAMS */
    float *grads;  /* device, MODEL_NPARAMS; written (not accumulated) by model_backward */
    /* Activations and scratch of one batch, carved from one allocation. */
    void *arena;
    float *x, *col1, *a1, *col2, *a2, *p1, *col3, *a3, *col4, *a4, *p2, *h, *logits, *dlogits;
    /* (col1..col4, the im2col matrices, are NULL with a table's direct convolutions: layers.h) */
    float *g_big, *g_small; /* activation gradients, ping-pong */
    uint8_t *idx1, *idx2, *labels;
    struct step_values *step; /* table memory: read by training forward passes and the update */
    double *sums;             /* table memory: [0] summed loss, [1] correct count (model_read_sums) */
};

/* Allocates parameters, gradients and activations for batches of up to max_batch images. Parameters
 * start at zero: upload them (model_set_params). Returns 0, or -1 when memory runs out. */
int model_create(struct model *m, const struct kernels *k, int max_batch);
void model_destroy(struct model *m);

void model_set_params(struct model *m, const float *host_params);
void model_get_params(const struct model *m, float *host_params);

/* Uploads the step's values: the dropout masks of the next training forward passes come from dropout_key
 * (rng_key(seed, epoch, step, rank, RNG_DROPOUT); layer i uses rng_u64(dropout_key, i) as its key), and
 * m->step->lr_t (a table-memory address for rmsprop_queue) holds lr_t. */
void model_set_step(struct model *m, uint64_t dropout_key, float lr_t);

/* Forward pass over B <= max_batch images x (host, float NHWC, B*32*32*3) with labels (host, 0..9);
 * x == m->x and labels == m->labels mean the batch is already in the model's input (a device table's
 * input ring put it there, or the caller uploaded it), and nothing is uploaded.
 * train != 0 applies dropout with the keys of model_set_step (read when the kernels run) and keeps what
 * backward needs. Adds the summed loss and the correct count to m->sums. */
void model_forward(struct model *m, const float *x, const uint8_t *labels, int B, int train);

/* m->sums: zeroes them; reads them (waits for the device), the count as an int. */
void model_clear_sums(struct model *m);
void model_read_sums(const struct model *m, double *loss_sum, int *correct);

/* Gradients of the mean loss of the last training forward pass into m->grads. When ready is not NULL it
 * is called as soon as the gradients of tensors [first, first + count) are final (layers in backward
 * order: dense_2 first), so that their allreduce can start while the rest of backward runs. */
typedef void (*model_grads_ready_fn)(void *ctx, float *grads, int first, int count);
void model_backward(struct model *m, int B, model_grads_ready_fn ready, void *ctx);

#endif
