/* Backend: hierarchical float32 allreduce for ranks spread over several hosts, several on some (hier.c),
 * and the agreement at coll_init on how the ranks spread and what crosses hosts (COLL_HIERARCHICAL,
 * COLL_COMPRESS: coll_world.hosts, hier, compress). Calls the MPI backend and shm.c, in its own layer. */
#ifndef COLL_HIER_H
#define COLL_HIER_H

#include "backend.h"

/* Collective, at coll_init before the progress thread runs (it calls MPI itself). compress_fp16: the
 * program's coll_init_opts or COLL_COMPRESS. Every rank must ask for the same, or coll_init fails on all. */
int coll_hier_open(int compress_fp16);
void coll_hier_close(void);
/* Host memory's backend when coll_world.hier: coll_mpi_backend, but a float32 allreduce goes per host. */
extern const struct coll_backend coll_hier_backend;

#endif
