/* The timeline's program, run by test_timeline.sh with COLL_TIMELINE set: test_timeline MODE [ARG]
 *   steps N     N training steps, each the Keras CIFAR-10 model's 12 gradient tensors queued
 *               asynchronously, the last layer's first, and waited for (collective #k is tensor 11 - k % 12
 *               of step k / 12); then coll_finalize.
 *   loop DIR    every rank writes its pid to DIR/rank.R and runs such steps without end, so that the script
 *               can kill or stop a rank; with TEST_SLEEP_AFTER=S the last rank stops calling collectives
 *               after S steps (a stall the watchdog must end).
 *   refused TEXT  coll_init must fail on every rank with COLL_ERR_ARG and a message containing TEXT on
 *               rank 0 (the script gives an unwritable COLL_TIMELINE); then, without COLL_TIMELINE, one step
 *               and coll_finalize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

/* The model's trainable tensors, kernel and bias of its 4 conv and 2 dense layers (libcollective's bench). */
static const size_t sizes[] = {864, 32, 9216, 32, 18432, 64, 36864, 64, 1179648, 512, 5120, 10};
#define TENSORS (sizeof sizes / sizeof sizes[0])

static float *grad[TENSORS];

static void step(void)
{
    coll_handle h[TENSORS];
    for (size_t i = TENSORS; i-- > 0;) /* backward: the last layer's gradients first, as a trainer queues */
        OK(coll_allreduce_async(grad[i], grad[i], sizes[i], COLL_FLOAT32, COLL_AVERAGE, &h[i]));
    OK(coll_wait_all());
}

static void start(void)
{
    OK(coll_init(NULL));
    for (size_t i = 0; i < TENSORS; i++) {
        grad[i] = test_alloc(sizes[i] * sizeof(float));
        test_random_floats(grad[i], sizes[i], (unsigned)i);
    }
}

static void steps(long n)
{
    start();
    for (long s = 0; s < n; s++)
        step();
    printf("rank %d: %ld steps\n", coll_rank(), n);
    OK(coll_finalize());
}

static void loop(const char *dir)
{
    start();
    char path[4096];
    snprintf(path, sizeof path, "%s/rank.%d", dir, coll_rank());
    FILE *f = fopen(path, "w");
    REQUIRE(f && fprintf(f, "%ld\n", (long)getpid()) > 0 && fclose(f) == 0, "cannot write %s", path);
    const char *v = getenv("TEST_SLEEP_AFTER");
    const long sleep_after = v ? atol(v) : -1;
    for (long s = 0;; s++) {
        if (s == sleep_after && coll_rank() == coll_size() - 1)
            for (;;)
                pause();
        step();
        usleep(2000); /* the rest of a training step */
    }
}

static void refused(const char *text)
{
    int rc = coll_init(NULL);
    REQUIRE(rc == COLL_ERR_ARG, "coll_init returned %d with COLL_TIMELINE=%s", rc, getenv("COLL_TIMELINE"));
    const char *e = coll_last_error();
    REQUIRE(strlen(e) > 20, "no message: '%s'", e);
    const char *rank = getenv("OMPI_COMM_WORLD_RANK"); /* coll_rank() is -1 after a failed coll_init */
    if (!rank || !strcmp(rank, "0"))
        REQUIRE(strstr(e, text), "rank 0's message does not say \"%s\": %s", text, e);
    printf("refused: %s\n", e);
    /* MPI stays up after a failed coll_init: without the timeline the program can go on. */
    unsetenv("COLL_TIMELINE");
    unsetenv("COLL_TIMELINE_MAX_MB");
    start();
    step();
    OK(coll_finalize());
}

int main(int argc, char **argv)
{
    check_mpi_ranks();
    const char *mode = argc > 2 ? argv[1] : "";
    if (!strcmp(mode, "steps"))
        steps(atol(argv[2]));
    else if (!strcmp(mode, "loop"))
        loop(argv[2]);
    else if (!strcmp(mode, "refused"))
        refused(argv[2]);
    else {
        fprintf(stderr, "usage: test_timeline steps N | loop DIR | refused TEXT\n");
        return 2;
    }
    return check_exit("test_timeline");
}
