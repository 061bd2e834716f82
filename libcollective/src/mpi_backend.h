/* Backend: host memory over MPI on coll_world.data (backend.h). Calls only leaves. */
#ifndef COLL_MPI_BACKEND_H
#define COLL_MPI_BACKEND_H

#include "backend.h"

extern const struct coll_backend coll_mpi_backend;
int coll_mpi_barrier(char *err); /* barriers carry no data: MPI runs them whatever the memory */
void coll_mpi_release(void);     /* frees the reduction scratch */

#endif
