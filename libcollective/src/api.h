/* The API on top (queue.c, init.c, host_alloc.c implement collective.h): what its files share. */
#ifndef COLL_API_H
#define COLL_API_H

int coll_finalize_barrier(void); /* queue.c: the COLL_KIND_FINALIZE barrier of coll_finalize() */

#endif
