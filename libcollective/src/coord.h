/* Control plane: the coordinator (coordinator.c, with stall.c), the view of who reached which sequence
 * number (rank 0's under MPI, every rank's on one host). It decides; the controller acts. */
#ifndef COLL_COORD_H
#define COLL_COORD_H

#include <stddef.h>
#include <stdint.h>

#include "desc.h"

struct coll_coord;
struct coll_coord *coll_coord_new(int size, int check); /* check: compare descriptors (COLL_CHECK) */
void coll_coord_free(struct coll_coord *c);
/* Rank `rank` announced requests first .. first+n-1 with descriptors d[0..n). */
int coll_coord_arrive(struct coll_coord *c, int rank, int64_t first, int64_t n, const struct coll_desc *d);
int64_t coll_coord_grantable(const struct coll_coord *c); /* every rank has announced all seqs below it */
/* Mismatch text of seq (NULL when it agreed); valid for seqs not yet released. */
const char *coll_coord_mismatch(const struct coll_coord *c, int64_t seq);
/* Some rank's announcement ended at seq (hostctl.c): a fused group must not run past it. */
void coll_coord_cut(struct coll_coord *c, int64_t seq);
int coll_coord_is_cut(const struct coll_coord *c, int64_t seq);
void coll_coord_release(struct coll_coord *c, int64_t upto); /* seqs below upto are granted */

/* The oldest collective that some rank has not announced, for the watchdog. */
struct coll_late {
    int64_t seq; /* -1: none */
    struct coll_desc desc;
    double since;    /* when the first rank announced it */
    char ranks[400]; /* "rank 2" or "ranks 1, 3" */
};
void coll_coord_late(const struct coll_coord *c, struct coll_late *out);

/* stall.c: "rank 2" or "ranks 1, 3": the ranks r with ready[r] <= seq; returns how many. */
int coll_stall_ranks(int64_t seq, const int64_t *ready, int size, char *buf, size_t len);

#endif
