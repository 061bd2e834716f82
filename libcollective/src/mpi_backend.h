/* Backend: host memory over MPI on coll_world.data (backend.h). Calls only leaves. */
#ifndef COLL_MPI_BACKEND_H
#define COLL_MPI_BACKEND_H

#include "backend.h"

#include <mpi.h>

extern const struct coll_backend coll_mpi_backend;
int coll_mpi_barrier(char *err); /* barriers carry no data: MPI runs them whatever the memory */
void coll_mpi_release(void);     /* frees the reduction scratch */
/* Completes n nonblocking requests without spinning (naps); `call` names them in an error. */
int coll_mpi_wait(int n, MPI_Request *reqs, const char *call, char *err);
/* The rank-ordered float32 allreduce (top of mpi_backend.c) of count elements on comm, in place when send ==
 * recv, dividing the sums by `divide` unless it is 0; fp16: float16 on the wire (split_f16); across_hosts:
 * every rank of comm is on a host of its own (the messages go in pieces, WIRE_PIECE). */
int coll_mpi_allreduce_f32(MPI_Comm comm, const float *send, float *recv, size_t count, float divide, int fp16,
                           int across_hosts, char *err);

#endif
