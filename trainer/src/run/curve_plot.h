/* curve_plot: the picture of a run, redrawn at each epoch's end by gnuplot (when it is on PATH) from the
 * --csv file (io/csv_log.h) into a PNG beside it (training.csv -> training.png): loss and val_loss on
 * the left, acc and val_acc on the right, against the epoch counted from 1.
 *
 * gnuplot never stops training: it runs as a child of its own (posix_spawn; its own process group; the
 * stop signals unblocked and at their default; its script on stdin from a memfd; output and errors to
 * /dev/null; none of our other descriptors), while the next epoch trains. At an epoch's end a drawing
 * still running is left to run, or killed (its whole group) once it has run CURVE_PLOT_WAIT seconds (and
 * given up on, drawing no more, when even SIGKILL does not end it within a second: a hung file system);
 * the next drawing starts once none runs. It writes a hidden temporary file that is renamed over the PNG once
 * gnuplot has exited 0, so a reader never sees half a picture. At the run's end the last drawing gets
 * CURVE_PLOT_WAIT seconds.
 * Without gnuplot nothing is drawn and the run says so once; a failed drawing is said once too. */
#ifndef TRAINER_CURVE_PLOT_H
#define TRAINER_CURVE_PLOT_H

#include <sys/types.h>

#define CURVE_PLOT_WAIT 10 /* seconds */

struct curve_plot {
    int on; /* gnuplot found and the paths usable */
    char csv[4096], png[4096], tmp[4200];
    pid_t pid;      /* the drawing running, 0 when none */
    double started; /* its start (progress_now) */
    int said_failure;
    int asked;        /* the epochs of the last CSV row */
    int lost_to_stop; /* the last drawing died of a signal not ours (the stop's: SIGTERM reaches every
                         process of a Slurm step under proctrack/linuxproc) */
};

/* For the CSV file `csv`; NULL or no gnuplot: off (said once on stdout). */
void curve_plot_open(struct curve_plot *p, const char *csv);

/* At an epoch's end, after the CSV's row of `epochs` (counted from 1): collects the last drawing and
 * starts the next one. */
void curve_plot_epoch(struct curve_plot *p, int epochs);

/* The run's end (a stop on a signal too): waits for the last drawing, at most CURVE_PLOT_WAIT seconds, and
 * when the signal that stopped the run killed it, draws once more, as long. */
void curve_plot_close(struct curve_plot *p);

#endif
