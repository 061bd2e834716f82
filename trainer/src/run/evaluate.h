/* evaluate: loss and accuracy over the test set, split across the ranks and summed, so that every rank
 * sees the same val_loss / val_acc; and `cifar-train evaluate`. */
#ifndef TRAINER_EVALUATE_H
#define TRAINER_EVALUATE_H

#include "core/model.h"
#include "input/batch_source.h"
#include "io/cifar_data.h"
#include "run/progress.h"
#include "run/train.h"

/* Collective: the test set through the model in batches of `batch` (this rank's share), the sums
 * allreduced. bar: a progress bar to advance, or NULL. Returns 0, or -1 after saying why. */
int evaluate_set(struct model *m, struct batch_source *src, const struct cifar_set *test, int batch, double *loss,
                 double *acc, struct progress *bar);

/* `cifar-train evaluate`: prints "Test loss: ..." and "Test accuracy: ..." on rank 0. Returns 0 or 1. */
int evaluate_run(const char *model_path, const struct train_options *o);

#endif
