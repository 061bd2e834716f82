/* The timeline (COLL_TIMELINE=FILE, Horovod's HOROVOD_TIMELINE): rank 0 writes a Chrome trace-event JSON
 * file of every collective's phases on every rank. A leaf: the progress thread, fusion and the watchdog
 * call into it; it calls nothing above it.
 *
 * Each rank measures its own five moments of a collective on its own clock (coll_now: CLOCK_MONOTONIC)
 * and hands them here as a record. Rank 0 turns its records and those the transport brings from the other
 * ranks (progress.c: inside the READY announcements; hostctl.c: a ring in each rank's part of the control
 * block) into events, buffered in memory; the progress thread flushes them every COLL_TL_FLUSH_SEC. */
#ifndef COLL_TIMELINE_H
#define COLL_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "desc.h"

enum { COLL_TL_QUEUED, COLL_TL_READY, COLL_TL_FUSED, COLL_TL_REDUCED, COLL_TL_DONE, COLL_TL_PHASES };

/* One collective on one rank: what it was, how many ran in its group, and when (coll_now seconds) the
 * program queued it, this rank learned that every rank had announced it, its group began, the backend
 * had reduced it, and it was complete. Sent as words between ranks, so all fields are 8 bytes. */
struct coll_tl_rec {
    int64_t seq;
    struct coll_desc d;
    int64_t group;
    double t[COLL_TL_PHASES];
};
#define COLL_TL_WORDS (sizeof(struct coll_tl_rec) / 8)

/* How often buffered events reach the file; the file is a complete JSON document after each flush. A
 * flush is also due once COLL_TL_FLUSH_RECORDS records wait, so that formatting them holds the progress
 * thread up for a bounded time (well under a millisecond), never a whole cadence's worth at once. */
#define COLL_TL_FLUSH_SEC 0.25
#define COLL_TL_FLUSH_RECORDS 256

/* coll_init, collective, after MPI is up and before the control block and the progress thread: rank 0
 * reads COLL_TIMELINE and COLL_TIMELINE_MAX_MB and opens the file; every rank learns whether the timeline
 * is on (coll_world.timeline) or fails as rank 0 did (COLL_ERR_ARG naming the file). */
int coll_timeline_open(void);
/* coll_finalize, after the progress thread has stopped: the last flush. */
void coll_timeline_close(void);

/* This rank's record of a completed collective (fusion.c, any thread that runs collectives). */
void coll_timeline_local(const struct coll_tl_rec *r);
/* Not rank 0: takes up to max of this rank's records not yet handed to the transport and returns how
 * many; *lost gets how many were dropped since the last call because the transport fell behind. */
size_t coll_timeline_outbox(struct coll_tl_rec *out, size_t max, int64_t *lost);
/* Rank 0: n records of `rank` brought by the transport, and `lost` that it could not carry. */
void coll_timeline_remote(int rank, const struct coll_tl_rec *r, size_t n, int64_t lost);
/* Rank 0's progress thread: flushes when the cadence is due (force: now). Returns when the next flush is
 * due (coll_now's clock), 0 when nothing is buffered. */
double coll_timeline_tick(int force);
/* Rank 0, any thread, the job about to abort: the reason as a marker event, then a flush; gives up rather
 * than wait long for a flush in progress. */
void coll_timeline_abort(const char *why);

#endif
