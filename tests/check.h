/* check.h: the assertion counter of the C unit tests (tests/<part>/test_*.c). CHECK(cond) counts a check
 * and reports a failed one with its file and line without stopping, so one run lists every failure;
 * check_exit(name) prints the tally and gives the exit status for tests/run-tests (0 pass, 1 fail). */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdio.h>

static int failures, checks;

#define CHECK(cond)                                                                                       \
    do {                                                                                                  \
        checks++;                                                                                         \
        if (!(cond)) {                                                                                    \
            failures++;                                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                      \
        }                                                                                                 \
    } while (0)

static inline int check_exit(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, checks, failures);
    return failures ? 1 : 0;
}

#endif
