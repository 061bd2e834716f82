/* Benchmark: parse + validate one job file many times and print the time per validation. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "jobfile/batchai_jobfile.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int iterations = argc > 2 ? atoi(argv[2]) : 2000;
    double best = 1e9, total = 0;

    if (argc < 2 || iterations < 1) {
        fprintf(stderr, "usage: bench_validate JOB.json [ITERATIONS]\n");
        return 2;
    }
    for (int i = 0; i < iterations; i++) {
        struct bai_diag diag = { 0 };
        struct bai_opened job;
        struct bai_job_source src = {.path = argv[1]};
        double t0 = now(), dt;
        int rc = bai_job_open(&src, NULL, BAI_JOB_PARSE, &bai_job_read_direct, &job, &diag);
        dt = now() - t0;
        if (rc != 0) {
            bai_diag_print(&diag, stderr, "bench_validate: ");
            return 1;
        }
        bai_opened_free(&job);
        bai_diag_free(&diag);
        total += dt;
        best = dt < best ? dt : best;
    }
    printf("validate %s: %.1f us mean, %.1f us best over %d runs (read + parse + validate, in-process)\n", argv[1],
           total / iterations * 1e6, best * 1e6, iterations);
    return 0;
}
