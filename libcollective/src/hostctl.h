/* Control plane: the control block of ranks that share a host (hostctl.c). coll_hostctl_open (coll_init,
 * before the progress thread, collective) maps it when every rank has rank 0's host key and no rank set
 * COLL_SHM=0, and sets coll_world.host_shared; otherwise, or when a rank cannot map it (said on stderr), it
 * returns COLL_OK without it. The rest is the progress thread's: announce publishes requests w[0..n)
 * (consecutive seqs) and returns how many fit in the log; arrive feeds every rank's new announcements to
 * the coordinator (1: some came, -1: bookkeeping failed); news says whether any rank announced what arrive
 * has not fed; granted publishes that seqs below upto are granted here. sleep sleeps the progress thread
 * until its bell rings or `until` passes (coll_now's clock, 0: no limit), unless ready(arg) holds already;
 * with `held` (locked by the caller) it sleeps without it. ring_self rings this rank's bell (any thread);
 * ring_peers every other rank's that sleeps. */
#ifndef COLL_HOSTCTL_H
#define COLL_HOSTCTL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "coord.h"
#include "request.h"

int coll_hostctl_open(void);
void coll_hostctl_close(void);
size_t coll_hostctl_announce(struct coll_request *const *w, size_t n);
int coll_hostctl_arrive(struct coll_coord *c);
int coll_hostctl_news(void *unused);
void coll_hostctl_granted(int64_t upto);
void coll_hostctl_sleep(pthread_mutex_t *held, double until, int (*ready)(void *), void *arg);
void coll_hostctl_ring_self(void);
void coll_hostctl_ring_peers(void);
/* With the timeline on, each rank's part ends in a ring of its timeline records (timeline.h): times_put
 * moves this rank's records there (not rank 0), times_take hands every other rank's to the timeline
 * (rank 0). */
void coll_hostctl_times_put(void);
void coll_hostctl_times_take(void);

#endif
