/* Helpers shared by the libcollective test programs; their assertions are tests/check.h's, and fatal (REQUIRE):
 * a rank that went on after a failed check could leave its peers waiting in a collective. */
#ifndef COLL_TESTLIB_H
#define COLL_TESTLIB_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"

#include "collective.h"

/* First thing in main: a failed check names its rank, and only rank 0 prints the passing checks and the TAP
 * plan (mpirun interleaves the ranks' output; a failure on any rank still prints its "not ok" and ends it).
 * Before coll_init the rank is the launcher's. */
static inline void test_checks_by_rank(void)
{
    const char *env = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : getenv("SLURM_PROCID");
    int rank = coll_rank() >= 0 ? coll_rank() : env ? atoi(env) : 0;
    char tag[32];
    snprintf(tag, sizeof tag, "rank %d", rank);
    check_tag(tag);
    check_quiet(rank != 0);
}

#define OK(call)                                                                                              \
    do {                                                                                                      \
        int rc_ = (call);                                                                                     \
        REQUIRE(rc_ == COLL_OK, "%s returned %d: %s", #call, rc_, coll_last_error());                           \
    } while (0)

/* Floats of mixed sign and magnitude (so that summation order would show), reproducible from seed. */
void test_random_floats(float *x, size_t n, unsigned seed);
void *test_alloc(size_t bytes); /* never NULL */

#endif
