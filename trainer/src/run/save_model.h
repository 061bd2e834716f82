/* save_model: rank 0's save of the step core's weights and RMSprop accumulators as a Keras HDF5 file
 * (io/keras_h5.h), refused when any value is NaN or infinite, so that no save holds a broken model. */
#ifndef TRAINER_SAVE_MODEL_H
#define TRAINER_SAVE_MODEL_H

#include "io/keras_h5.h"
#include "run/step_core.h"

/* Saves to `path` through the host buffers host_params and host_acc (MODEL_NPARAMS floats each): 0, -1
 * after an error, or TRAIN_EXIT_NONFINITE (nothing written) when a value is NaN or infinite; `where` names
 * the step in that message. */
int save_model(const char *path, const char *where, const struct step_core *c, float *host_params, float *host_acc,
               const struct keras_train_state *st);

#endif
