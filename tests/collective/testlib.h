/* Helpers shared by the libcollective test programs. */
#ifndef COLL_TESTLIB_H
#define COLL_TESTLIB_H

#include <stddef.h>

#include "collective.h"

/* Prints "rank R: FAIL file:line: message" and exits 1 (mpirun then ends the other ranks). */
void test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));
#define CHECK(cond, ...)                                                                                      \
    do {                                                                                                      \
        if (!(cond))                                                                                          \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                                                       \
    } while (0)
#define OK(call)                                                                                              \
    do {                                                                                                      \
        int rc_ = (call);                                                                                     \
        CHECK(rc_ == COLL_OK, "%s returned %d: %s", #call, rc_, coll_last_error());                           \
    } while (0)

/* Floats of mixed sign and magnitude (so that summation order would show), reproducible from seed. */
void test_random_floats(float *x, size_t n, unsigned seed);
void *test_alloc(size_t bytes); /* never NULL */

#endif
