/* check.h: the one assertion header of the C tests (tests/<part>/test_*.c and helpers), writing TAP on stdout.
 *
 *   CHECK(cond)                     a test point: "ok N - cond", or "not ok N - cond" and a "# file:line"
 *   CHECK(cond, "fmt", args...)     diagnostic; the optional message (with the values) is printed after it
 *   CHECK_INT(a, op, b)             integers compared with op (==, <, ...); a failure prints both values
 *   CHECK_STR(a, b)                 strings equal (NULL is a value too); a failure prints both
 *   REQUIRE(...)                    as CHECK, but a failure ends the program (status 1): for a check whose
 *                                   failure leaves nothing sane to go on with (a NULL, an MPI rank that
 *                                   would leave its peers waiting)
 *   check_note("fmt", ...)          a "# " comment line
 *   worst = check_max(worst, err)   the running worst of errors, NaN-aware: a NaN error makes it NaN for good,
 *                                   so CHECK(worst <= tol) fails (fmax and `if (err > worst)` skip a NaN);
 *                                   check_worse(err, worst) says whether err takes its place (to keep the index)
 *   check_tag("rank 2")             names the process in each failure's diagnostic; check_mpi_ranks() for MPI
 *   return check_exit("name");      the trailing plan "1..N" and a tally; status 0 when nothing failed, else 1
 *   return check_skip("dep", "why") the TAP skip plan and the runner's "SKIP(dep): why"; status 77
 *
 * A check inside a loop is one test point: its first pass prints one "ok" line and later passes only count,
 * so a check over a million elements keeps the log short; every failure prints its own "not ok". Failures do
 * not stop the program (except REQUIRE), so one run lists them all. check_quiet(1) drops the "ok" lines and
 * the plan (check_mpi_ranks() does, on every rank but 0). */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct check_state {
    int points;  /* TAP lines printed: the plan's N */
    long evals;  /* checks evaluated, loop passes included */
    long failed; /* of those, failed */
    int quiet;
    char tag[64]; /* who failed, where one program runs as several processes (an MPI rank) */
};
static struct check_state check_g;

__attribute__((format(printf, 7, 8), unused)) static void check_point_(int *seen, int ok, int fatal, const char *file,
                                                                        int line, const char *what, const char *fmt,
                                                                        ...)
{
    check_g.evals++;
    if (ok) {
        if (!*seen && !check_g.quiet)
            printf("ok %d - %s\n", ++check_g.points, what);
        *seen = 1;
    } else {
        check_g.failed++;
        printf("not ok %d - %s\n# %s:%d: check failed%s%s\n", ++check_g.points, what, file, line,
               check_g.tag[0] ? " on " : "", check_g.tag);
        if (fmt[1]) { /* fmt is " " followed by the caller's message, if any */
            va_list ap;
            va_start(ap, fmt);
            fputs("#  ", stdout);
            vprintf(fmt + 1, ap);
            va_end(ap);
            putchar('\n');
        }
    }
    fflush(stdout);
    if (!ok && fatal) {
        printf("# stopping here: the checks after this one depend on it\n");
        exit(1);
    }
}

/* Each expansion has its own check_seen_: the test point's "ok" is printed once. cond is named as written
 * (stringified here, before its macros expand). */
#define CHECK_POINT_(fatal, ok, what, ...)                                                                     \
    do {                                                                                                       \
        static int check_seen_;                                                                                \
        check_point_(&check_seen_, ok, fatal, __FILE__, __LINE__, what, " " __VA_ARGS__);                      \
    } while (0)
#define CHECK(cond, ...) CHECK_POINT_(0, (cond) ? 1 : 0, #cond, __VA_ARGS__)
#define REQUIRE(cond, ...) CHECK_POINT_(1, (cond) ? 1 : 0, #cond, __VA_ARGS__)

#define CHECK_INT(a, op, b)                                                                                    \
    do {                                                                                                       \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                                        \
        CHECK_POINT_(0, check_a_ op check_b_, #a " " #op " " #b, "%s is %lld, %s is %lld", #a, check_a_, #b,    \
                     check_b_);                                                                                \
    } while (0)

static inline int check_str_eq_(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}
#define CHECK_STR(a, b)                                                                                        \
    do {                                                                                                       \
        const char *check_a_ = (a), *check_b_ = (b);                                                           \
        CHECK_POINT_(0, check_str_eq_(check_a_, check_b_), #a " equals " #b, "%s is \"%s\", %s is \"%s\"", #a,  \
                     check_a_ ? check_a_ : "(null)", #b, check_b_ ? check_b_ : "(null)");                      \
    } while (0)

/* Whether err is worse than worst: larger, or a NaN where worst is a number yet. */
static inline int check_worse(double err, double worst)
{
    return !isnan(worst) && (isnan(err) || err > worst);
}

static inline double check_max(double worst, double err)
{
    return check_worse(err, worst) ? err : worst;
}

__attribute__((format(printf, 1, 2), unused)) static void check_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("# ", stdout);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static inline void check_quiet(int quiet)
{
    check_g.quiet = quiet;
}

static inline void check_tag(const char *tag)
{
    snprintf(check_g.tag, sizeof check_g.tag, "%s", tag);
}

/* A program that runs as MPI ranks (mpirun or srun), first thing in main: failures name their rank, and
 * only rank 0 prints the passing checks and the plan, as mpirun interleaves the ranks' output. */
static inline void check_mpi_ranks(void)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK")
                    : getenv("PMIX_RANK")          ? getenv("PMIX_RANK")
                                                   : getenv("SLURM_PROCID");
    char tag[32];
    snprintf(tag, sizeof tag, "rank %d", r ? atoi(r) : 0);
    check_tag(tag);
    check_quiet(r && atoi(r) != 0);
}

static inline long check_failures(void)
{
    return check_g.failed;
}

static inline int check_exit(const char *name)
{
    if (!check_g.quiet)
        printf("1..%d\n", check_g.points);
    if (!check_g.quiet || check_g.failed)
        printf("# %s: %ld checks, %ld failed\n", name, check_g.evals, check_g.failed);
    fflush(stdout);
    return check_g.failed ? 1 : 0;
}

/* what: dep, root, gpu or shared (tests/run-tests says which a machine must have). */
__attribute__((format(printf, 2, 3), unused)) static int check_skip(const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("1..0 # SKIP ");
    va_list aq;
    va_copy(aq, ap);
    vprintf(fmt, aq);
    va_end(aq);
    printf("\nSKIP(%s): ", what);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    return 77;
}

#endif
