/* Leaf: time, naps and threads. Includes nothing of libcollective's. */
#ifndef COLL_CLOCK_H
#define COLL_CLOCK_H

#include <pthread.h>

double coll_now(void); /* monotonic seconds */
/* Sleeps the next of a growing series of short naps (*nap: 0 to start the series); coll_nap_next only
 * advances it and returns the nap in seconds. How libcollective waits for MPI without spinning. */
void coll_nap(double *nap);
double coll_nap_next(double *nap);
/* pthread_create with every signal blocked in the new thread: the application's handlers (a trainer's
 * SIGTERM, say) run in the application's threads, never in the library's in the middle of MPI. */
int coll_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
