/* csv_log: the per-epoch CSV file of Keras's CSVLogger(append=True), one row per finished epoch:
 *
 *   epoch,acc,loss,val_acc,val_loss,images_per_sec
 *   0,0.3125,2.0781,0.375,1.9629,412.5
 *
 * as Keras writes it: Python's csv module's excel dialect (',' and "\r\n" line ends), the epoch counted
 * from 0, the metrics' columns sorted by name, each number as Python's repr() prints a float (the shortest
 * text that reads back as the same double). images_per_sec (training images per second over all ranks)
 * comes last, after Keras's columns, so that a reader of Keras's files finds them where Keras puts them.
 *
 * Opening for a run that continues after `epochs_done` finished epochs keeps the header and the rows of
 * epochs 0 .. epochs_done - 1 and cuts the file after them (ftruncate + fsync: the rows of an epoch whose
 * checkpoint was never written, and a row cut short by a kill, go), so that a stop, a requeue and a
 * resume leave one row per epoch, none twice, none missing. A file whose first line is another header is
 * refused, untouched. Each row is appended whole or not at all (io/append_whole.h).
 *
 * Functions return 0, or -1 with the file and the problem in err. */
#ifndef TRAINER_CSV_LOG_H
#define TRAINER_CSV_LOG_H

#include <stddef.h>

#define CSV_LOG_HEADER "epoch,acc,loss,val_acc,val_loss,images_per_sec"

struct csv_log {
    int fd; /* -1: closed */
    char path[4096];
};

int csv_log_open(struct csv_log *c, const char *path, int epochs_done, char *err, size_t errlen);

/* The row of epoch `epoch` (0-based). */
int csv_log_row(struct csv_log *c, int epoch, double acc, double loss, double val_acc, double val_loss,
                double images_per_sec, char *err, size_t errlen);

void csv_log_close(struct csv_log *c);

/* `v` as Python's repr(float) prints it, into out (32 bytes are enough). */
void csv_log_number(char *out, size_t len, double v);

#endif
