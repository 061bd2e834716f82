/* output_dirs: where a run writes (--dir's saved_models, --checkpoint-dir), made and proven writable before
 * the first step, so that a run that could not save its work does not start. */
#ifndef TRAINER_OUTPUT_DIRS_H
#define TRAINER_OUTPUT_DIRS_H

#include "run/train.h"

/* Collective. Rank 0 creates --dir/saved_models and --checkpoint-dir, proves each writable by creating (and
 * removing) a temporary file the way every save does, and removes the temporaries a killed writer left
 * there (atomic_file_cleanup_dir); every rank learns the outcome. Returns 0, or -1 (said by rank 0). */
int output_dirs_prepare(const struct train_options *o, int rank);

#endif
