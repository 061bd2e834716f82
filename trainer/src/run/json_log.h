/* json_log: the --log-json file, one JSON object a line: a "step" line every --log-every steps and an
 * "epoch" line after each epoch's validation (trainer/README.md, --log-json). */
#ifndef TRAINER_JSON_LOG_H
#define TRAINER_JSON_LOG_H

#include <stdio.h>

/* Writes one line to f and flushes it (nothing when f is NULL). val: val_loss and val_acc, or NULL (step
 * lines). times (epoch lines): seconds in step_core_step, of which waiting for the gradient allreduces, and
 * CPU seconds of libcollective's threads, over the epoch (make bench-scaling reads them), or NULL. */
void json_log_line(FILE *f, const char *type, int epoch, int step, int steps, double loss, double acc,
                   const double *val, double ips, double lr, double secs, const double *times);

#endif
