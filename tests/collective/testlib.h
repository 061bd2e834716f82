/* Helpers shared by the libcollective test programs. Their assertions are tests/check.h's, fatal (REQUIRE):
 * a rank that went on after a failed check could leave its peers waiting in a collective. Each program
 * calls check_mpi_ranks() first. */
#ifndef COLL_TESTLIB_H
#define COLL_TESTLIB_H

#include <stddef.h>

#include "../check.h"

#include "collective.h"

#define OK(call)                                                                                              \
    do {                                                                                                      \
        int rc_ = (call);                                                                                     \
        REQUIRE(rc_ == COLL_OK, "%s returned %d: %s", #call, rc_, coll_last_error());                           \
    } while (0)

/* Floats of mixed sign and magnitude (so that summation order would show), reproducible from seed. */
void test_random_floats(float *x, size_t n, unsigned seed);
void *test_alloc(size_t bytes); /* never NULL */

#endif
