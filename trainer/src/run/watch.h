/* watch: what rank 0 writes at each epoch's end for people to watch the run: the Keras CSV log
 * (io/csv_log.h), TensorBoard event files (io/tb_events.h) and the PNG of the curves (run/curve_plot.h),
 * each when asked for (--csv, --tensorboard; the PNG with the CSV).
 *
 * Opening checks what it can before the first step (a CSV of another kind, a directory that cannot be
 * made): the run then ends with the error. A write that fails later (a full disk) is said once and that
 * writer stops; training goes on, since the checkpoints are what a resume needs. */
#ifndef TRAINER_WATCH_H
#define TRAINER_WATCH_H

#include "io/csv_log.h"
#include "io/tb_events.h"
#include "run/curve_plot.h"

struct watch {
    struct csv_log csv;
    struct tb_events tb;
    struct curve_plot plot;
};

/* The values of one finished epoch. */
struct watch_epoch {
    int epoch; /* 0-based, as Keras counts in its CSV and TensorBoard callbacks */
    double loss, acc, val_loss, val_acc;
    double images_per_sec; /* training images per second over all ranks */
    double lr;             /* the learning rate at the epoch's end (RMSprop's, after decay) */
};

/* For a run that continues after `epochs_done` finished epochs; `resumed`: it started from a checkpoint.
 * csv, tb_dir: NULL for none. 0, or -1 after saying why on stderr. */
int watch_open(struct watch *w, const char *csv, const char *tb_dir, int epochs_done, int resumed);

void watch_epoch(struct watch *w, const struct watch_epoch *e);

void watch_close(struct watch *w);

#endif
