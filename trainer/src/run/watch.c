#include "run/watch.h"

#include <stdio.h>
#include <string.h>

int watch_open(struct watch *w, const char *csv, const char *tb_dir, int epochs_done, int resumed)
{
    char err[4400];
    memset(w, 0, sizeof *w);
    w->csv.fd = w->tb.fd = -1;
    if (csv && csv_log_open(&w->csv, csv, epochs_done, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: --csv: %s\n", err);
        return -1;
    }
    if (tb_dir && tb_events_open(&w->tb, tb_dir, resumed ? epochs_done : -1, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: --tensorboard: %s\n", err);
        csv_log_close(&w->csv);
        return -1;
    }
    curve_plot_open(&w->plot, csv);
    return 0;
}

void watch_epoch(struct watch *w, const struct watch_epoch *e)
{
    char err[4400];
    if (w->csv.fd >= 0 &&
        csv_log_row(&w->csv, e->epoch, e->acc, e->loss, e->val_acc, e->val_loss, e->images_per_sec, err, sizeof err)) {
        fprintf(stderr, "cifar-train: warning: --csv: %s: no more rows are written to it (from epoch %d)\n", err,
                e->epoch + 1);
        csv_log_close(&w->csv);
    }
    static const char *const tags[] = {"loss", "acc", "val_loss", "val_acc", "images_per_sec", "lr"};
    const float values[] = {(float)e->loss, (float)e->acc, (float)e->val_loss, (float)e->val_acc,
                            (float)e->images_per_sec, (float)e->lr};
    if (w->tb.fd >= 0 && tb_events_scalars(&w->tb, e->epoch, tags, values, 6, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: warning: --tensorboard: %s: no more events are written to it (from epoch %d)\n",
                err, e->epoch + 1);
        tb_events_close(&w->tb);
    }
    if (w->csv.fd >= 0)
        curve_plot_epoch(&w->plot, e->epoch + 1);
}

void watch_close(struct watch *w)
{
    curve_plot_close(&w->plot);
    csv_log_close(&w->csv);
    tb_events_close(&w->tb);
}
