/* Leaf: what every rank must agree on for one collective (the coordinator compares it), and check.c's
 * comparison of two. */
#ifndef COLL_DESC_H
#define COLL_DESC_H

#include <stddef.h>
#include <stdint.h>

/* COLL_KIND_FINALIZE is the barrier coll_finalize() runs: a rank that finalizes while another still
 * calls collectives is then a mismatch (which aborts) instead of a hang in MPI_Finalize. */
enum coll_kind { COLL_KIND_ALLREDUCE, COLL_KIND_BROADCAST, COLL_KIND_ALLGATHER, COLL_KIND_BARRIER, COLL_KIND_FINALIZE };

/* shm_region is the node-shared region (shm.c) that holds an in-place float32 allreduce's buffer on this
 * rank (its id + 1; 0: none), shm_offset the buffer's byte offset in it: the reduction reads the peers'
 * copies at that offset, so every rank must name the same place. apply is 1 for
 * coll_allreduce_apply_async: on one host its reduced values go to the program's function instead of into
 * every rank's buffer, so a rank that asked for a plain allreduce there would never see them. */
struct coll_desc {
    int64_t kind, count, dtype, op, root, device, shm_region, shm_offset, apply;
};
#define COLL_DESC_WORDS 9

/* check.c: compares two descriptors; writes what differs into msg (returns 1) or returns 0. */
int coll_check_differs(const struct coll_desc *a, int rank_a, const struct coll_desc *b, int rank_b,
                       int64_t seq, char *msg, size_t len);
void coll_desc_format(const struct coll_desc *d, char *buf, size_t len);

#endif
