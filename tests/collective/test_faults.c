/* Faults, run by test_faults.sh: test_faults MODE [ARG]
 *   stall R     rank R sleeps 3 s before an allreduce; the script sets COLL_STALL_WARNING_SEC=1 and looks
 *               for rank 0's message naming rank R. The allreduce must still succeed.
 *   abort       the last rank sleeps 120 s; COLL_STALL_ABORT_SEC makes rank 0 abort the job.
 *   mismatch    (COLL_MISMATCH_ABORT=0) ranks disagree on count, on type, on broadcast root, on applying
 *               an allreduce or not, on the size of a coll_host_alloc and, node-shared, on a tensor's place
 *               in it: every rank gets the error naming both sides; the next, agreeing collective still
 *               works.
 *   loop DIR    every rank writes its pid to DIR/rank.R and then runs allreduces (async, 1 MiB, as a
 *               training step does) without end; the script stops or kills one rank and expects the job to
 *               end within COLL_STALL_ABORT_SEC. With TEST_LOOP_SHARED=1 the buffer is coll_host_alloc's
 *               (node-shared under mpirun: the reduction then waits on the peers' marks, not in MPI).
 *   diverge     the last rank calls coll_finalize while the others call an allreduce: the job aborts.
 *   nodevice    coll_init asking for a GPU: on a machine without one it fails with COLL_ERR_UNSUPPORTED
 *               and a message, and coll_init(NULL) then works.
 *   badenv TEXT the script sets a malformed COLL_* variable: coll_init refuses with COLL_ERR_ARG and a
 *               message containing TEXT (the variable's name and what is wrong). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

static int rank, size;

static void start(void)
{
    OK(coll_init(NULL));
    rank = coll_rank();
    size = coll_size();
}

static void agreeing_allreduce(void)
{
    float x[3] = {1, 2, 3};
    OK(coll_allreduce(x, x, 3, COLL_FLOAT32, COLL_SUM));
    for (int i = 0; i < 3; i++)
        REQUIRE(x[i] == (float)((i + 1) * size), "allreduce after the fault: element %d is %g", i, x[i]);
}

static void stall(int sleeper)
{
    start();
    if (rank == sleeper)
        sleep(3);
    agreeing_allreduce();
    OK(coll_finalize());
}

static void stall_abort(void)
{
    start();
    if (rank == size - 1)
        sleep(120);
    agreeing_allreduce();
    REQUIRE(0, "the job was not aborted");
}

static void expect_mismatch(int rc, const char *mine, const char *theirs)
{
    const char *e = coll_last_error();
    REQUIRE(rc == COLL_ERR_MISMATCH, "disagreeing collective returned %d (%s)", rc, e);
    REQUIRE(strstr(e, "differs across ranks") && strstr(e, mine) && strstr(e, theirs),
            "mismatch message does not name both sides (\"%s\", \"%s\"): %s", mine, theirs, e);
    if (rank == 0)
        printf("rank 0 got: %s\n", e);
}

static void count_hand_overs(void *ctx, float *at, size_t n, const float *reduced, int first_rank, int nranks)
{
    (void)at, (void)n, (void)reduced, (void)first_rank, (void)nranks;
    ++*(int *)ctx;
}

static void mismatch(void)
{
    start();
    REQUIRE(size >= 2, "mismatch needs two ranks or more");
    int odd = rank == size - 1;
    float f[11] = {0};
    char theirs[160];

    snprintf(theirs, sizeof theirs, "rank %d called allreduce sum of 11 x float32", size - 1);
    expect_mismatch(coll_allreduce(f, f, odd ? 11 : 10, COLL_FLOAT32, COLL_SUM), "of 10 x float32", theirs);

    snprintf(theirs, sizeof theirs, "rank %d called allreduce sum of 10 x int32", size - 1);
    expect_mismatch(coll_allreduce(f, f, 10, odd ? COLL_INT32 : COLL_FLOAT32, COLL_SUM), "of 10 x float32", theirs);

    /* Asynchronous too: queued with others, refused alone, the rest still fused and right. */
    coll_handle a, b, c;
    float x[4] = {1, 1, 1, 1}, y[4] = {2, 2, 2, 2};
    OK(coll_allreduce_async(x, x, 4, COLL_FLOAT32, COLL_SUM, &a));
    OK(coll_broadcast_async(f, 10, COLL_FLOAT32, odd ? 1 : 0, &b));
    OK(coll_allreduce_async(y, y, 4, COLL_FLOAT32, COLL_AVERAGE, &c));
    OK(coll_wait(a));
    snprintf(theirs, sizeof theirs, "rank %d called broadcast of 10 x float32 from root 1", size - 1);
    expect_mismatch(coll_wait(b), "from root 0", theirs);
    OK(coll_wait(c));
    REQUIRE(x[0] == (float)size && y[3] == 2.0f, "collectives around the refused one: %g %g", x[0], y[3]);

    /* An allreduce applied on some ranks and plain on another: on one host the plain one would never get
     * the values handed to the others' function. Refused everywhere, and no function is called. */
    int applied = 0;
    if (odd)
        OK(coll_allreduce_async(f, f, 10, COLL_FLOAT32, COLL_SUM, &a));
    else
        OK(coll_allreduce_apply_async(f, 10, COLL_SUM, count_hand_overs, &applied, &a));
    snprintf(theirs, sizeof theirs, "rank %d called allreduce sum of 10 x float32 in host memory", size - 1);
    expect_mismatch(coll_wait(a), "called allreduce-apply sum of 10 x float32 in host memory", theirs);
    REQUIRE(!applied, "a refused allreduce_apply handed its values over %d times", applied);

    /* coll_host_alloc: the size is agreed everywhere; a tensor's place only where the memory is shared. */
    float *s = coll_host_alloc(odd ? 128 : 64);
    REQUIRE(!s, "coll_host_alloc of different sizes succeeded");
    snprintf(theirs, sizeof theirs, "rank %d for 128", size - 1);
    REQUIRE(strstr(coll_last_error(), "coll_host_alloc #0 differs across ranks: rank 0 asked for 64 bytes") &&
              strstr(coll_last_error(), theirs), "size mismatch not named: %s", coll_last_error());
    if (rank == 0)
        printf("rank 0 got: %s\n", coll_last_error());
    REQUIRE((s = coll_host_alloc(64 * sizeof *s)), "coll_host_alloc: %s", coll_last_error());
    if (coll_host_shared(s)) {
        snprintf(theirs, sizeof theirs, "rank %d called allreduce sum of 8 x float32 in node-shared memory "
                 "(coll_host_alloc #1, byte 64)", size - 1);
        expect_mismatch(coll_allreduce(s + (odd ? 16 : 0), s + (odd ? 16 : 0), 8, COLL_FLOAT32, COLL_SUM),
                        "(coll_host_alloc #1, byte 0)", theirs);
    }
    OK(coll_host_free(s));

    agreeing_allreduce();
    OK(coll_finalize());
}

static void loop(const char *dir)
{
    start();
    char path[4096];
    snprintf(path, sizeof path, "%s/rank.%d", dir, rank);
    FILE *f = fopen(path, "w");
    REQUIRE(f && fprintf(f, "%ld\n", (long)getpid()) > 0 && fclose(f) == 0, "cannot write %s", path);
    enum { N = 1 << 18 };
    const char *shared = getenv("TEST_LOOP_SHARED");
    float *g = shared && !strcmp(shared, "1") ? coll_host_alloc(N * sizeof *g) : test_alloc(N * sizeof *g);
    REQUIRE(g, "coll_host_alloc: %s", coll_last_error());
    for (;;) {
        coll_handle h[4];
        for (int i = 0; i < 4; i++)
            OK(coll_allreduce_async(g + i * (N / 4), g + i * (N / 4), N / 4, COLL_FLOAT32, COLL_AVERAGE, &h[i]));
        usleep(2000); /* the rest of a backward pass */
        OK(coll_wait_all());
    }
}

static void diverge(void)
{
    start();
    agreeing_allreduce();
    if (rank == size - 1) {
        coll_finalize();
    } else {
        float x = 1;
        coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM);
    }
    REQUIRE(0, "rank %d returned from a diverged collective: the job was not aborted", rank);
}

static void nodevice(void)
{
    struct coll_init_opts o = {.use_device = 1};
    int rc = coll_init(&o);
    if (rc == COLL_OK) {
        printf("a CUDA device is present: device %d\n", coll_device());
        OK(coll_finalize());
        return;
    }
    REQUIRE(rc == COLL_ERR_UNSUPPORTED, "use_device=1 without a GPU returned %d: %s", rc, coll_last_error());
    REQUIRE(strlen(coll_last_error()) > 20, "no message for the refused device: '%s'", coll_last_error());
    printf("use_device=1 refused: %s\n", coll_last_error());
    REQUIRE(coll_rank() == -1, "rank %d after a failed coll_init", coll_rank());
    start();
    agreeing_allreduce();
    OK(coll_finalize());
}

static void badenv(const char *text)
{
    int rc = coll_init(NULL);
    REQUIRE(rc == COLL_ERR_ARG, "a malformed setting was accepted (%d), expected: %s", rc, text);
    REQUIRE(strstr(coll_last_error(), text), "message does not say \"%s\": %s", text, coll_last_error());
    printf("refused: %s\n", coll_last_error());
}

int main(int argc, char **argv)
{
    check_mpi_ranks();
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "stall") && argc > 2)
        stall(atoi(argv[2]));
    else if (!strcmp(mode, "abort"))
        stall_abort();
    else if (!strcmp(mode, "mismatch"))
        mismatch();
    else if (!strcmp(mode, "loop") && argc > 2)
        loop(argv[2]);
    else if (!strcmp(mode, "diverge"))
        diverge();
    else if (!strcmp(mode, "nodevice"))
        nodevice();
    else if (!strcmp(mode, "badenv") && argc > 2)
        badenv(argv[2]);
    else {
        fprintf(stderr, "usage: test_faults stall RANK | abort | mismatch | loop DIR | diverge | nodevice | badenv TEXT\n");
        return 2;
    }
    if (rank == 0)
        printf("test_faults %s: passed\n", mode);
    return check_exit("test_faults");
}
