/* Time, naps and threads (clock.h). */
#include "clock.h"

#include <signal.h>
#include <time.h>

double coll_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Naps grow from 10 us to 200 us: a grant or a transfer that is about to arrive is seen within a few
 * microseconds, and a peer that is a whole layer late costs some 5000 wake-ups a second (about 1% of a
 * core) instead of a core polled flat out. The thread's timer slack is 1 us (progress_main), or the
 * kernel would round every nap up by its default 50 us. */
#define NAP_MIN 10e-6
#define NAP_MAX 200e-6

double coll_nap_next(double *nap)
{
    *nap = *nap <= 0 ? NAP_MIN : *nap * 2 < NAP_MAX ? *nap * 2 : NAP_MAX;
    return *nap;
}

void coll_nap(double *nap)
{
    struct timespec ts = {.tv_nsec = (long)(coll_nap_next(nap) * 1e9)};
    nanosleep(&ts, NULL);
}

int coll_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits this mask */
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

