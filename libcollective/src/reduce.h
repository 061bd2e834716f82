/* Leaf: the reduction arithmetic. */
#ifndef COLL_REDUCE_H
#define COLL_REDUCE_H

#include <stddef.h>

/* own[k] = part[0][k] + part[1][k] + ... + part[n-1][k] for k < len, added in rank order, then divided by
 * `divide` unless it is 0: the one float32 reduction both paths (mpi_backend.c, shm.c) use, so they agree
 * to the bit. part[0] or part[1] may be own itself (each element is read before it is written); a later
 * one may not. */
void coll_sum_f32(float *own, const float *const *part, int n, size_t len, float divide);

#endif
