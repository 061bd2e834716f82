/* checkpoint_files: the checkpoints in --checkpoint-dir, by name: finding the newest (--resume auto) and
 * keeping only some (--keep-checkpoints, --keep-best).
 *
 * Names: checkpoint-{E}.h5 (epoch E done) and checkpoint-{E}-step-{S}.h5 (a stop after S steps of epoch
 * E); nothing else in the directory is looked at or touched. */
#ifndef TRAINER_CHECKPOINT_FILES_H
#define TRAINER_CHECKPOINT_FILES_H

#include <stddef.h>

/* 1 with the position (epochs done, steps done in the next) when `name` is a checkpoint's, else 0. */
int checkpoint_position(const char *name, long *epochs_done, long *step);

/* --resume auto: the checkpoint furthest into the run in `dir` into path; 1 found, 0 none, -1 error (said). */
int checkpoint_newest(const char *dir, char *path, size_t len);

/* After checkpoint-{newest}.h5 is complete on disk (keras_save returned: written, fsynced, renamed, the
 * directory fsynced): removes the epoch checkpoints other than the `keep` newest and, when best > 0,
 * checkpoint-{best}.h5; and the step checkpoints of epochs up to `newest` (it supersedes them). keep 0:
 * removes nothing. Returns how many were removed; a failed removal is said on stderr and skipped. */
int checkpoint_prune(const char *dir, long newest, int keep, long best);

#endif
