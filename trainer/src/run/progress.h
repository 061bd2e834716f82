/* progress: Keras 2.x's Progbar (verbose=1) as the tutorial's console shows it, e.g.
 *     12/159 [=>............................] - ETA: 1:02 - loss: 2.3091 - acc: 0.1042
 *    159/159 [==============================] - 12s 75ms/step - loss: 2.2 - acc: 0.15 - val_loss: ...
 * On a terminal (not under mpirun/srun, whose pseudo-terminals usually end in a log) the bar is redrawn in place (carriage return) at most 10 times a second; into a file or
 * pipe a full line is written at most every PROGRESS_FILE_INTERVAL seconds, and the final line always. */
#ifndef TRAINER_PROGRESS_H
#define TRAINER_PROGRESS_H

#include <stdio.h>

#define PROGRESS_FILE_INTERVAL 30.0

struct progress {
    FILE *out;
    int target;
    int tty;
    double start, last_draw;
    int drawn_width; /* characters of the line currently on the terminal */
};

/* Seconds on a monotonic clock. */
double progress_now(void);

void progress_start(struct progress *p, FILE *out, int target);

/* current < target: intermediate (throttled) draw with ETA; current == target with final != 0: the
 * closing line with total time and time per step, then a newline. values: the text after the bar, e.g.
 * " - loss: 2.3091 - acc: 0.1042" (see progress_value). */
void progress_update(struct progress *p, int current, const char *values, int final);

/* Whether progress_update(p, current, values, 0) would draw now: for callers whose values cost something
 * to get (a device's loss sums wait for the device). */
int progress_due(const struct progress *p, int current);

/* Append " - name: value" to buf as Keras formats it ("%.4f", or "%.4e" when |value| <= 1e-3). */
void progress_value(char *buf, size_t len, const char *name, double value);

#endif
