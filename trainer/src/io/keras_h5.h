/* keras_h5: the tutorial's model in the Keras 2.x HDF5 layout — the final model
 * (<dir>/saved_models/keras_cifar10_trained_model.h5) and checkpoint-{epoch}.h5 — written atomically and
 * read back with every name and shape checked.
 *
 * Everything about the model comes from model.h's layer table, never from here: the layers and their
 * configs (model_config), the layer names, and the parameter tensors (model_tensor(): names, shapes,
 * offsets). Parameters cross this boundary as ONE float32 array of MODEL_NPARAMS values in that layout;
 * for this model:
 *   conv2d_1 kernel (3,3,3,32) HWIO, bias (32)      conv2d_2 kernel (3,3,32,32), bias (32)
 *   conv2d_3 kernel (3,3,32,64), bias (64)          conv2d_4 kernel (3,3,64,64), bias (64)
 *   dense_1 kernel (2304,512) in x out, bias (512)  dense_2 kernel (512,10), bias (10)
 * The RMSprop accumulators use the same layout (one float per parameter). What this file owns is the
 * file format around them, as Keras 2.1.6 (keras/models.py save_model + engine/topology.py
 * save_weights_to_hdf5_group, TensorFlow backend) writes it, so Keras load_model() and h5py read it:
 *   /                      attrs keras_version "2.1.6", backend "tensorflow", model_config (JSON of the
 *                          Sequential model: {"class_name": "Sequential", "config": [layer, ...]}, each
 *                          layer {"class_name", "config"} with Keras's own keys and defaults), training_config
 *                          (JSON: optimizer_config RMSprop {lr, rho, decay, epsilon}, loss
 *                          "categorical_crossentropy", metrics ["accuracy"], sample_weight_mode null,
 *                          loss_weights null). All attribute strings are fixed-length byte strings, as h5py
 *                          writes Python bytes.
 *   /model_weights         attrs layer_names (all the table's layers, in order: conv2d_1, activation_1, ...,
 *                          dense_2, activation_6), backend, keras_version
 *   /model_weights/<layer> attr weight_names: ["<layer>/kernel:0", "<layer>/bias:0"], or an empty float64
 *                          array for layers without weights (what h5py makes of Keras's empty list)
 *   /model_weights/<layer>/<layer>/kernel:0, bias:0    float32 datasets, shapes as above
 *   /optimizer_weights     (when accumulators are given) attr weight_names "training/RMSprop/Variable:0" ..
 *                          "training/RMSprop/Variable_11:0", one float32 dataset each (nested groups
 *                          training/RMSprop/, as h5py creates for a name with slashes), in model_tensor()
 *                          order and shapes. Keras 2.1.6's RMSprop state is exactly these accumulators: its
 *                          `iterations` is not part of optimizer.weights, so it is kept below.
 *   /batchai_training_state (ours; Keras ignores unknown groups) attrs, all scalars:
 *                          iterations (uint64: optimizer steps done, drives lr_t = lr/(1+decay*iterations)),
 *                          epoch (int64: epochs completed), lr, rho, decay, epsilon (float64, exact values
 *                          used, where training_config has Keras's float32-rounded ones), seed (uint64),
 *                          world_size, threads, step, batch (int64), format_version (int64,
 *                          KERAS_STATE_FORMAT: 2 added threads, step, generator and the sums), and strings
 *                          generator (who wrote it), weights_sha256 and optimizer_sha256 (SHA-256 of the
 *                          model_weights / optimizer_weights arrays as float32 little-endian, in model_tensor()
 *                          order): a flipped bit is found on reading.
 * The trainer derives all randomness from (seed, epoch, step, rank), so no RNG state is stored: these
 * fields are enough to resume exactly.
 *
 * Errors: functions return 0 on success and -1 on failure with a message in err[errlen] (when err is not
 * NULL) naming the file and the object, e.g.
 *   "ckpt/checkpoint-3.h5: model_weights/dense_1/dense_1/kernel:0: shape (2304,256), expected (2304,512)"
 *   "model.h5: not an HDF5 file or truncated"
 * Writing builds the file in memory and writes it with write(2): a full disk reads
 *   "ckpt/checkpoint-3.h5: cannot write: No space left on device"
 * and leaves the old file (if any) as it was.
 * HDF5's own error stack printing is switched off for the duration of each call (and restored). A wrong
 * file never crashes the reader: every object is checked for existence, class, type, rank and shape
 * before data is read into the caller's arrays, and a NaN or infinite value in any array is refused (naming
 * the dataset). When the file has the checksums they are checked; --resume (state != NULL) requires them. On
 * failure the caller's arrays may be partly overwritten.
 *
 * Thread-safety: the Debian HDF5 library is not thread-safe; call these from one thread at a time. */
#ifndef TRAINER_KERAS_H5_H
#define TRAINER_KERAS_H5_H

#include <stddef.h>
#include <stdint.h>

#define KERAS_STATE_FORMAT 2
#define KERAS_VERSION "2.1.6"
#define KERAS_MODEL_DIR "saved_models"
#define KERAS_MODEL_NAME "keras_cifar10_trained_model.h5"

/* Everything beyond the arrays that a checkpoint needs to resume exactly. */
struct keras_train_state {
    uint64_t iterations; /* optimizer updates applied so far */
    int64_t epoch;       /* epochs completed (checkpoint-{epoch}.h5 holds epoch == {epoch}, 1-based as Keras) */
    double lr;           /* base learning rate (1e-4 * world size in the recipe) */
    double rho;          /* 0.9 */
    double decay;        /* 1e-6 */
    double epsilon;      /* 1e-7 */
    uint64_t seed;
    int64_t world_size;
    int64_t threads;     /* compute threads per process that wrote it (the sums' order depends on them) */
    int64_t step;        /* steps done in epoch `epoch` + 1: 0 at an epoch's end, > 0 when a signal stopped
                            the run mid-epoch (checkpoint-{epoch+1}-step-{step}.h5) */
    int64_t batch;       /* --batch-size per process (a mid-epoch checkpoint's step counts batches of it) */
    int64_t best_epoch;  /* the epoch (1-based) with the highest val_acc so far, 0: none yet (--keep-best) */
    double best_val_acc; /* its val_acc */
    /* A mid-epoch checkpoint's running sums of that epoch's steps so far, as rank 0 showed them, so that
     * a resumed run's row of the epoch covers all its steps (0 at an epoch's end, and in older files). */
    double part_loss_sum;
    int64_t part_correct, part_seen;
    double part_seconds; /* its training time so far (images per second) */
    char generator[64];  /* "cifar-train (slurm-batchai) VERSION" (free text, not checked) */
};

/* Write the model to `path` atomically (atomic_file.h: temp file in the same directory, H5Fclose, fsync,
 * rename, fsync of the directory). params: MODEL_NPARAMS floats (required). rms: the RMSprop
 * accumulators, same layout, or NULL to write no optimizer_weights group. state: required (training_config
 * needs lr/rho/decay/epsilon); its batchai_training_state group is written too. The same call writes
 * checkpoints and the final model (Keras's ModelCheckpoint and model.save() write the same layout). The
 * directory of `path` must exist. */
int keras_save(const char *path, const float *params, const float *rms, const struct keras_train_state *state,
               char *err, size_t errlen);

/* Read a file written by keras_save() or by Keras 2.x for this model. Always reads and checks
 * model_weights (layer_names, weight_names, and each kernel/bias dataset: float type, rank, shape) into
 * params. rms != NULL: also reads optimizer_weights (weight_names must list one dataset per parameter tensor,
 * shapes as model_tensor() in order); a file without them is an error ("no optimizer state: not a checkpoint").
 * state != NULL: also reads batchai_training_state; missing is an error. Pass NULL for what is not needed
 * (evaluate reads weights only; --resume reads all three). */
int keras_load(const char *path, float *params, float *rms, struct keras_train_state *state, char *err,
               size_t errlen);

#endif
