/* any_failed: all ranks agree on a failure of one, so that every rank takes the same way out. */
#ifndef TRAINER_ANY_FAILED_H
#define TRAINER_ANY_FAILED_H

/* Collective: returns nonzero on every rank when `failed` is nonzero on any (and when the allreduce
 * itself failed, said on stderr). */
int any_failed(int failed);

#endif
