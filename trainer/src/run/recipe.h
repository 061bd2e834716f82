/* recipe: what one rank is about to run, as words every rank can compare at start (train.c gathers them
 * from all ranks before the first step). Ranks that run different recipes would average gradients of
 * different models, batches or data and still exit 0, or stall when their step counts differ; comparing
 * the fields themselves, not one hash, lets the refusal name each field and rank that differs.
 *
 * Fields (recipe_field_name): model (a digest of the parameter table: layer names and shapes), batch_size,
 * epochs (effective: ceil(100 / size) when not given), lr (as given; 0 = the default for the world size),
 * seed, augmentation, shard, and the data: image counts of the training and test sets after --limit-*,
 * and a 64-bit fingerprint of each set's bytes (labels and pixels). */
#ifndef TRAINER_RECIPE_H
#define TRAINER_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include "io/cifar_data.h"
#include "run/train.h"

enum {
    RECIPE_MODEL,
    RECIPE_BATCH,
    RECIPE_EPOCHS,
    RECIPE_LR,
    RECIPE_SEED,
    RECIPE_AUGMENT,
    RECIPE_SHARD,
    RECIPE_TRAIN_IMAGES,
    RECIPE_TEST_IMAGES,
    RECIPE_TRAIN_DATA,
    RECIPE_TEST_DATA,
    RECIPE_NFIELDS
};

struct recipe {
    int64_t v[RECIPE_NFIELDS]; /* lr as the bits of its double, digests as unsigned bits */
};

void recipe_of(struct recipe *r, const struct train_options *o, int world_size, const struct cifar_set *train,
               const struct cifar_set *test);

/* all[0..size): every rank's recipe. Writes one line per rank that differs from rank 0, naming the fields
 * and both values ("rank 1: batch_size 64 (rank 0: 32), epochs 3 (rank 0: 2)"), into msg (cut short at
 * len with "..."); returns how many ranks differ. */
int recipe_compare(const struct recipe *all, int size, char *msg, size_t len);

/* A fast 64-bit digest of n bytes, chained from h (not cryptographic: it tells copies apart). */
uint64_t recipe_fingerprint(const void *p, size_t n, uint64_t h);

#endif
