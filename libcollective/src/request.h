/* Leaf: one queued collective, as every layer above sees it. Only the controller (controller.h) sets done,
 * status and error, under its lock. */
#ifndef COLL_REQUEST_H
#define COLL_REQUEST_H

#include "collective.h"
#include "desc.h"
#include "errors.h"

struct coll_shm_region;

struct coll_request {
    int64_t seq;
    struct coll_desc d;
    const void *send;
    void *recv;
    double queued_at;     /* coll_now() when the program queued it (the watchdog's clock) */
    double granted_at;    /* with the timeline on: when this rank's progress thread saw it granted */
    double running_since; /* set under the controller's lock while its backend call runs; 0 before */
    int done;   /* set under the controller's lock by the progress thread */
    int status; /* COLL_OK or the failure */
    char error[COLL_ERRLEN];
    struct coll_shm_region *shm; /* d.shm_region's region on this rank, or NULL */
    coll_apply_fn apply;         /* d.apply: coll_allreduce_apply_async's function and its context */
    void *apply_ctx;
    int cut_after; /* one host: a fused group ends here, on every rank alike (coll_coord_cut) */
    struct coll_request *pending_next;          /* FIFO of requests the progress thread has not taken */
    struct coll_request *live_prev, *live_next; /* every request not yet freed by a wait */
};

#endif
