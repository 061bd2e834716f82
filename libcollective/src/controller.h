/* The controller: the progress thread (progress.c), which alone completes requests, and the watchdog
 * (watchdog.c). What changes while collectives run lives here, under one lock: the queue the API fills,
 * the requests not yet freed, and the watchdog's view of the oldest late collective. */
#ifndef COLL_CONTROLLER_H
#define COLL_CONTROLLER_H

#include <pthread.h>
#include <stdint.h>

#include "coord.h"
#include "request.h"

struct coll_ctl {
    pthread_mutex_t lock;
    pthread_cond_t work_cv; /* progress thread: new requests, flush, stop */
    pthread_cond_t done_cv; /* waiters: a request completed */
    struct coll_request *pending_head, *pending_tail;
    struct coll_request *live_head, *live_tail;
    int64_t next_seq; /* sequence number of the next request */
    int flush;        /* a waiter wants the queued requests announced now */
    /* The progress thread holds requests it has not announced, and will take every queued request and
     * announce them all at its cycle deadline: a new request need not wake it (each wake-up costs the
     * core a compute thread needs). */
    int cycle_pending;
    int stop;
    pthread_t thread;

    /* Rank 0's coordinator's view (every rank's on one host), published by the progress thread for the
     * watchdog thread, which cannot read the coordinator itself. */
    struct coll_late late;
    pthread_t watchdog;
    int watchdog_running;
    pthread_cond_t watchdog_cv; /* wakes the watchdog to stop */
};
extern struct coll_ctl coll_ctl;

/* progress.c */
int coll_progress_start(void);
void coll_progress_stop(void);
/* Wakes the progress thread for a new request, a flush or a stop; with coll_ctl.lock held. */
void coll_progress_wake_locked(void);
/* A process without MPI: runs r in the calling thread and completes it. */
void coll_progress_run_inline(struct coll_request *r);

/* watchdog.c: a thread of its own that ends a job stuck in a collective, whatever the progress thread is
 * doing (waiting for a grant, or blocked inside MPI or NCCL). */
int coll_watchdog_start(void);
void coll_watchdog_stop(void);
/* Prints the line (prefixed "libcollective: ", naming this rank) and aborts the whole job: NCCL's
 * communicator first, then MPI_Abort. Any thread may call it. */
void coll_abort_job(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
