/* train_data: the CIFAR-10 data a run reads: the directory (--data, or --download's, fetched by one process
 * per node), verified and loaded on every rank. */
#ifndef TRAINER_TRAIN_DATA_H
#define TRAINER_TRAIN_DATA_H

#include <stddef.h>

#include "io/cifar_data.h"
#include "run/train.h"

/* Collective with --download. The directory to read into dir; 0, or -1 after saying why. */
int train_data_dir(const struct train_options *o, char *dir, size_t len);

/* Collective. The verified training and test sets (--limit-train, --limit-test): 0 on every rank, or -1 on
 * every rank when any failed (said by the ranks that did). */
int train_data_load(const struct train_options *o, struct cifar_set *train, struct cifar_set *test);

#endif
