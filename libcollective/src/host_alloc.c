/* coll_host_alloc and friends (collective.h): the API over the node-shared regions of shm.c. Allocation is
 * collective: the ranks agree on the size and on a name stem (rank 0's pid and a clock value) through the
 * public collectives, since the progress thread, not this one, may call MPI by now. */
#include "collective.h"
#include "shm.h"

#include "clock.h"
#include "errors.h"
#include "world.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Words of coll_host_alloc's agreement per rank: size, rank 0's name stem (pid, clock). */
enum { AGREE_WORDS = 3 };

/* coll_shm_share's count of failures everywhere, through a queued allreduce. */
static int failures_queued(int mine)
{
    int32_t v = mine != 0;
    return coll_allreduce(&v, &v, 1, COLL_INT32, COLL_SUM) == COLL_OK ? v : -1;
}

/* The size is agreed wherever there are ranks, so that a program that gets it wrong fails on a laptop as
 * it would on one node of a cluster; on one host the region is then shared. */
static int agree_and_share(struct coll_shm_region *g, size_t bytes)
{
    const int n = coll_world.size;
    const long long id = (long long)coll_shm_region_id(g);
    int64_t mine[AGREE_WORDS] = {(int64_t)bytes, (int64_t)getpid(), (int64_t)(coll_now() * 1e9)};
    int64_t *all = malloc(AGREE_WORDS * (size_t)n * sizeof *all);
    int rc = all ? coll_allgather(mine, all, AGREE_WORDS, COLL_INT64)
                 : coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for coll_host_alloc's agreement");
    for (int r = 1; rc == COLL_OK && r < n; r++) {
        const int64_t *theirs = all + AGREE_WORDS * r;
        if (theirs[0] != all[0])
            rc = coll_fail(COLL_ERR_ARG,
                           "libcollective: coll_host_alloc #%lld differs across ranks: rank 0 asked for %lld "
                           "bytes, rank %d for %lld",
                           id, (long long)all[0], r, (long long)theirs[0]);
    }
    char what[64];
    snprintf(what, sizeof what, "coll_host_alloc #%lld", id);
    if (rc == COLL_OK && coll_world.host_shared && coll_shm_share(g, all + 1, what, failures_queued) < 0)
        rc = COLL_ERR_BACKEND;
    free(all);
    return rc;
}

void *coll_host_alloc(size_t bytes)
{
    if (!coll_world.initialised) {
        coll_fail(COLL_ERR_STATE, "libcollective: coll_host_alloc called before coll_init()");
        return NULL;
    }
    struct coll_shm_region *g = coll_shm_region_new(bytes);
    if (!g)
        return NULL;
    if (coll_world.use_mpi && coll_world.size > 1 && agree_and_share(g, bytes) != COLL_OK) {
        free(g);
        return NULL;
    }
    return coll_shm_region_keep(g);
}

int coll_host_free(void *p)
{
    return p ? coll_shm_region_drop(p) : COLL_OK;
}

int coll_host_shared(const void *p)
{
    int64_t id, offset;
    return p && coll_shm_find(p, 0, &id, &offset) != NULL;
}

void *coll_host_peer(const void *p, int rank)
{
    return coll_shm_peer(p, rank);
}
