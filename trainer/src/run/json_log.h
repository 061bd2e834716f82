/* json_log: the --log-json file, one JSON object a line: a "step" line every --log-every steps and an
 * "epoch" line after each epoch's validation (trainer/README.md, --log-json). */
#ifndef TRAINER_JSON_LOG_H
#define TRAINER_JSON_LOG_H

#include <stdio.h>

/* The figures of an epoch's line beyond the step line's: seconds in step_core_step, of which waiting for
 * the gradient allreduces, and CPU seconds of libcollective's threads, over the epoch (make bench-scaling
 * reads them). */
struct json_epoch_times {
    double step_seconds, wait_seconds, progress_cpu_seconds;
};

/* One line. epoch and step are 1-based. */
struct json_line {
    const char *type; /* "step" or "epoch" */
    int epoch, step, steps;
    double loss, acc;                    /* the mean loss and accuracy of the epoch's steps so far */
    int validated;                       /* 1: val_loss and val_acc are written (epoch lines) */
    double val_loss, val_acc;
    double images_per_sec, lr, seconds;
    const struct json_epoch_times *times; /* epoch lines, or NULL */
};

/* Writes one line to f and flushes it (nothing when f is NULL). */
void json_log_line(FILE *f, const struct json_line *line);

#endif
