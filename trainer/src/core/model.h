/* model: the tutorial's CIFAR-10 network (trainer.md), its parameters, and one training step's forward
 * and backward passes over the kernels of one device.
 *
 * model.c's layer table is the ONLY description of the network: the Keras Sequential model's layers in
 * order, each with its kind, Keras name and config. Everything else is derived from it: each layer's
 * output shape, the parameter tensors and their offsets, the activation buffers, the forward and backward
 * passes (loops over the table), each kind's Keras class and config (model.c's kinds table), and, in
 * keras_h5.c, the model_config JSON and the HDF5 group and dataset names and shapes built from them.
 * Adding a layer means adding a row; adding a kind of layer, an entry in the kinds table, its cases in the
 * passes, and its kernels (kernels.h).
 *
 *   conv2d_1  3x3 same  3->32  + ReLU      32x32x32
 *   conv2d_2  3x3 valid 32->32 + ReLU      30x30x32   max_pooling2d_1 -> dropout_1 (0.25)  15x15x32
 *   conv2d_3  3x3 same  32->64 + ReLU      15x15x64
 *   conv2d_4  3x3 valid 64->64 + ReLU      13x13x64   max_pooling2d_2 -> dropout_2 (0.25)  6x6x64
 *   flatten_1 -> dense_1 2304->512 + ReLU -> dropout_3 (0.5) -> dense_2 512->10 + softmax
 *
 * Parameters live in ONE array of MODEL_NPARAMS floats in Keras order and layout (model_tensor()): for
 * each layer with weights, in table order, the kernel (HWIO for Conv2D, in x out for Dense), then the
 * bias; row-major within each tensor, as h5py/numpy see it. dense_1's inputs are the flattened NHWC
 * activation in Keras's order. The kernels compute directly in that layout, so no conversion happens
 * anywhere. Gradients and the RMSprop accumulators use the same layout, so a single fused allreduce
 * averages all gradients. */
#ifndef TRAINER_MODEL_H
#define TRAINER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/kernels.h"

/* The input (CIFAR-10 images, NHWC) and the classes: the data's format, which the table's first and last
 * layers are built on. */
#define MODEL_CLASSES 10
#define MODEL_IN_H 32
#define MODEL_IN_W 32
#define MODEL_IN_C 3

/* What the forward and backward passes support (model.c checks the table against it once):
 *  - MODEL_CONV: Conv2D size x size (3 only), stride 1, padding "same" (pad 1) or "valid" (pad 0),
 *    `units` filters, linear with bias; an Activation("relu") right after it is fused into it.
 *  - MODEL_DENSE: Dense, `units` outputs, linear with bias, on a flat input; a following
 *    Activation("relu") is fused into it, and a Dropout after that runs in place on its output. The last
 *    layer is a Dense followed by Activation("softmax"), which the loss (softmax cross-entropy) computes.
 *  - MODEL_MAXPOOL: MaxPooling2D size x size (2 only), stride = size, "valid"; a Dropout right after it
 *    is fused into it (kernels.pool_dropout_forward).
 *  - MODEL_FLATTEN: a no-op on NHWC data.
 *  - MODEL_ACTIVATION, MODEL_DROPOUT: only where fused as above. */
enum model_kind { MODEL_CONV, MODEL_DENSE, MODEL_MAXPOOL, MODEL_FLATTEN, MODEL_ACTIVATION, MODEL_DROPOUT };

struct model_layer {
    /* The table's columns. */
    enum model_kind kind;
    const char *name;        /* Keras layer name: "conv2d_1", "activation_1", ... */
    int units;               /* MODEL_CONV: filters; MODEL_DENSE: units */
    int size;                /* MODEL_CONV: kernel size; MODEL_MAXPOOL: pool size and stride */
    int pad;                 /* MODEL_CONV: 1 "same", 0 "valid" */
    const char *activation;  /* MODEL_ACTIVATION: "relu" or "softmax" */
    double rate;             /* MODEL_DROPOUT: the fraction dropped (Keras's `rate`) */
    /* Derived from the columns by model.c. */
    const char *keras_class; /* the kind's Keras class: "Conv2D", "Activation", ... */
    int h, w, c;             /* output shape of one image (h = w = 1 when flat) */
    int tensor, ntensors;    /* its parameter tensors: [tensor, tensor + ntensors), ntensors 0 or 2 */
    int dropout;             /* MODEL_DROPOUT: its index among the dropout layers (its key), else -1 */
};

/* One parameter tensor, derived from the table: a layer's kernel or bias. */
struct model_tensor {
    const char *layer;  /* the layer's Keras name */
    const char *weight; /* "kernel:0" or "bias:0" */
    int rank;           /* 4 (Conv2D kernel, HWIO), 2 (Dense kernel, in x out), 1 (bias) */
    size_t shape[4];    /* first `rank` entries used */
    size_t offset;      /* first float of this tensor in the parameter array */
    size_t count;       /* product of the shape */
};

/* Where a layer's Keras config is written (keras_h5.c's JSON text): text as is, and a float as Python's
 * repr writes it. */
struct model_json {
    void (*text)(void *ctx, const char *s);
    void (*pyfloat)(void *ctx, double v);
    void *ctx;
};

/* The keys of row L's Keras config that its class adds after Layer's name and trainable, in Keras 2.1.6's
 * order, each preceded by ", " (e.g. `, "rate": 0.25, "noise_shape": null, "seed": null`). */
void model_keras_config(const struct model_layer *L, const struct model_json *out);

/* The table, in Keras's order, and what is derived from it. The first call derives it (thread-safe) and
 * aborts with a message when the table asks for what the passes do not support (a programming error). */
int model_nlayers(void);
const struct model_layer *model_layer(int i);
int model_ntensors(void);
const struct model_tensor *model_tensor(int t); /* offsets are contiguous, in table order */
size_t model_nparams(void);
int model_ndropout(void);
float model_dropout_rate(int d); /* of the dropout layer whose `dropout` is d, as the kernels apply it */

/* Not a constant expression: derived from the table. */
#define MODEL_NPARAMS model_nparams()
/* Capacity of struct step_values's dropout keys (model.c checks the table's dropout layers fit). */
#define MODEL_MAX_DROPOUT 8

/* What changes from one training step to the next, kept in the table's memory (kernels.h) and written
 * by one upload before each step (model_set_step), so that a replayed CUDA graph reads each step's. */
struct step_values {
    uint64_t dropout[MODEL_MAX_DROPOUT]; /* the dropout layers' keys: model_dropout_key(dropout_key, d) */
    float lr_t;          /* the learning rate of this step's update (rmsprop_lr_t) */
};

/* Keras's glorot_uniform kernels and zero biases, from (seed) with the counter-based rng; host memory. */
void model_init_params(float *params, uint64_t seed);

struct model_slot; /* model.c: one layer's buffers (output, a convolution's saved state, pooling indices) */

struct model {
    const struct kernels *k;
    int max_batch;
    float *params; /* device, MODEL_NPARAMS */
    float *grads;  /* device, MODEL_NPARAMS; written (not accumulated) by model_backward */
    int lent;      /* params and grads are the caller's (model_create), not freed here */
    /* Activations and scratch of one batch, carved from one allocation in table order. */
    void *arena;
    float *x, *dlogits;
    float *g_big, *g_small; /* activation gradients, ping-pong */
    uint8_t *labels;
    struct model_slot *slots; /* host memory, one per layer */
    struct step_values *step; /* table memory: read by training forward passes and the update */
    double *sums;             /* table memory: [0] summed loss, [1] correct count (model_read_sums) */
    /* Optional (NULL, the default: no calls): called as the work of table row `layer` begins in forward
     * (backward 0) or backward (backward 1), and with layer -1 as that pass ends, so that trainer-bench
     * can time each layer's kernel calls. On the CPU the kernels have finished when they return; with a
     * device table the calls would mark queueing, not execution. */
    void (*trace)(void *ctx, int layer, int backward);
    void *trace_ctx;
};

/* Allocates parameters, gradients and activations for batches of up to max_batch images. Parameters
 * start at zero: upload them (model_set_params). params and grads, both NULL or both not, are the buffers
 * to use instead of the table's (MODEL_NPARAMS zeroed floats each in the table's memory, 64-byte
 * aligned; the caller frees them after model_destroy): the trainer lends libcollective's node-shared
 * memory there. Returns 0, or -1 when memory runs out. */
int model_create(struct model *m, const struct kernels *k, int max_batch, float *params, float *grads);
void model_destroy(struct model *m);

void model_set_params(struct model *m, const float *host_params);
void model_get_params(const struct model *m, float *host_params);

/* Uploads the step's values: the dropout masks of the next training forward passes come from dropout_key
 * (rng_key(seed, epoch, step, rank, RNG_DROPOUT); dropout layer d uses rng_u64(dropout_key, d) as its
 * key), and m->step->lr_t (a table-memory address for rmsprop_queue) holds lr_t. */
void model_set_step(struct model *m, uint64_t dropout_key, float lr_t);

/* The key of dropout layer d's masks in a step whose dropout key is dropout_key (kernels.h dropout_kept). */
uint64_t model_dropout_key(uint64_t dropout_key, int d);

/* Uploads B <= max_batch images x (host, float NHWC, B*32*32*3) and their labels (host, 0..9) into the
 * model's input, m->x and m->labels, where model_forward reads them. (A device table's input ring puts
 * batches there itself: input/batch_source.h.) */
void model_load(struct model *m, const float *x, const uint8_t *labels, int B);

/* Forward pass over the B images in the model's input (m->x, m->labels).
 * train != 0 applies dropout with the keys of model_set_step (read when the kernels run) and keeps what
 * backward needs. Adds the summed loss and the correct count to m->sums. */
void model_forward(struct model *m, int B, int train);

/* The output of table row `row` in the last forward pass (this table's memory, B x h x w x c as the row's
 * model_layer says; rows fused into the one before, and Flatten, share its buffer). */
const float *model_output(const struct model *m, int row);

/* m->sums: zeroes them; reads them (waits for the device), the count as an int. */
void model_clear_sums(struct model *m);
void model_read_sums(const struct model *m, double *loss_sum, int *correct);

/* Gradients of the mean loss of the last training forward pass into m->grads. When ready is not NULL it
 * is called as soon as the gradients of tensors [first, first + count) are final (one call per layer with
 * weights, in backward order: dense_2 first), so that their allreduce can start while the rest of
 * backward runs. */
typedef void (*model_grads_ready_fn)(void *ctx, float *grads, int first, int count);
void model_backward(struct model *m, int B, model_grads_ready_fn ready, void *ctx);

#endif
