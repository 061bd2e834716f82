/* The fusion executor (fusion.c): runs granted requests through the backends, fusing allreduces. It
 * completes nothing itself: it hands each request's status to the caller's hooks, and the caller (the
 * controller) completes it. */
#ifndef COLL_FUSION_H
#define COLL_FUSION_H

#include <stddef.h>

#include "request.h"
#include "shm.h"

struct coll_fusion_hooks {
    /* Before a group runs: w0, its first request, runs from t on (the watchdog then blames the backend). */
    void (*started)(struct coll_request *w0, double t);
    /* r ran with status (COLL_OK, or the failure and its text); its waiter may free it from then on. */
    void (*finished)(struct coll_request *r, int status, const char *error);
    const struct coll_shm_bell *bell; /* what node-shared reductions wait on */
};

/* Runs the granted requests w[0..n) in order, fusing allreduces, and reports each one through the hooks.
 * An apply request reduced here (not in node-shared memory) gets its whole buffer handed to its function. */
void coll_fusion_run(const struct coll_fusion_hooks *h, struct coll_request **w, size_t n);
void coll_fusion_release(void);

#endif
