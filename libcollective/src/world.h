/* Leaf: the facts coll_init() settles before any other thread runs, read by every layer and written by
 * none after it (init.c defines and fills it; hostctl.c and device.c report into it during coll_init).
 * What changes while collectives run (the queue, the lock, the watchdog's view) is the controller's alone
 * (controller.h). */
#ifndef COLL_WORLD_H
#define COLL_WORLD_H

#include <mpi.h>

#include "env.h"

struct coll_world {
    int initialised;
    int rank, size, local_rank, local_size, device;
    int use_mpi;   /* 0: single process without a launcher, no MPI at all */
    /* Every rank shares this host and the control block (hostctl.c) is mapped: the ranks coordinate
     * through it instead of MPI messages, and coll_host_alloc() shares memory. */
    int host_shared;
    /* How the ranks spread over hosts (hier.c): hosts counted by host key (shm.c); hier: float32
     * allreduces of host memory sum per host in node-shared memory, then across hosts between one leader
     * per host; compress: those that cross hosts travel as float16 (hosts > 1 and asked for). */
    int hosts, hier, compress;
    int mpi_owned; /* we called MPI_Init_thread, so we call MPI_Finalize */
    int timeline;  /* COLL_TIMELINE is on (rank 0's setting): every rank records its collectives' phases */
    MPI_Comm data; /* collectives */
    MPI_Comm ctrl; /* coordinator messages, so they never match a collective's */
    struct coll_env env;
};
extern struct coll_world coll_world;

#endif
