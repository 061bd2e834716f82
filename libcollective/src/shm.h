/* Backend: node-shared memory regions and the float32 allreduce that reads them in place (shm.c). It
 * calls only leaves: the agreement a region needs and the bell its reduction sleeps on are handed down
 * by the caller (host_alloc.c, hostctl.c). */
#ifndef COLL_SHM_H
#define COLL_SHM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"

struct coll_shm_region;

/* A region of `bytes` (the next coll_host_alloc id), not yet shared; NULL with the error set. */
struct coll_shm_region *coll_shm_region_new(size_t bytes);
int64_t coll_shm_region_id(const struct coll_shm_region *g);
/* Collective: maps every rank's object of g, named from stem (rank 0's words), into every rank. Returns
 * 1 when shared, 0 to fall back to private memory (the failing rank says why, naming `what`, on stderr),
 * -1 when a collective failed. failures_everywhere(mine) returns the job's count of ranks whose `mine`
 * is not 0, or -1 with the error set. */
int coll_shm_share(struct coll_shm_region *g, const int64_t *stem, const char *what,
                   int (*failures_everywhere)(int mine));
/* Keeps g (private memory when it was not shared) and returns its data; NULL with the error set (g freed). */
void *coll_shm_region_keep(struct coll_shm_region *g);
int coll_shm_region_drop(void *p); /* the region whose data is p; COLL_ERR_ARG when there is none */
/* The region holding [p, p + bytes) and its id and offset there, or NULL. */
struct coll_shm_region *coll_shm_find(const void *p, size_t bytes, int64_t *id, int64_t *offset);
void *coll_shm_peer(const void *p, int rank); /* rank's copy of p, NULL when p is not shared */

/* coll_init's control block: `bytes` per rank, shared when every rank has rank 0's host key and none set
 * COLL_SHM=0 (*out NULL when not; a rank that cannot map it says why on stderr). Calls MPI itself, before
 * the progress thread runs. coll_shm_rank_data gives rank r's part of a shared region as mapped here. */
int coll_shm_block(size_t bytes, struct coll_shm_region **out);
void coll_shm_block_free(struct coll_shm_region *g);
/* This host's key: a hash of COLL_HOST_ID when set, else of the host name and boot id. */
uint64_t coll_shm_host_key(void);
/* Like the control block, for the ranks r with same_host[r] only (hier.c, at coll_init, collective over all
 * ranks): 1 mapped (*out), 0 fall back (the failing rank says why), -1 a collective failed. Freed with
 * coll_shm_block_free. */
int coll_shm_host_region(size_t bytes, const int64_t *stem, const unsigned char *same_host,
                         struct coll_shm_region **out);
void *coll_shm_rank_data(const struct coll_shm_region *g, int r);

/* How the reduction waits for the other ranks: the control block's bells (hostctl.h). ring_peers rings
 * every other rank's that sleeps; sleep sleeps until this rank's rings or `until` passes (coll_now's
 * clock, 0: no limit), unless ready(arg) holds already; with `held` (locked by the caller) without it. */
struct coll_shm_bell {
    void (*ring_peers)(void);
    void (*sleep)(pthread_mutex_t *held, double until, int (*ready)(void *), void *arg);
};
/* Runs the in-place float32 allreduces w[0..k), all in one region, on the progress thread: each rank sums
 * its slice of every tensor out of all ranks' segments into all of them (an apply request: into its
 * function), then waits on the bell until every rank has done its slices. */
int coll_shm_allreduce(struct coll_request **w, size_t k, const struct coll_shm_bell *bell, char *err);

#endif
