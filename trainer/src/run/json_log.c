/* json_log: the --log-json lines (json_log.h). */
#include "run/json_log.h"

#include <math.h>

/* A line being written, and the fields in it that were not finite: JSON has no NaN or infinity, so those
 * are null, and "non_finite" says what each was (the NaN stop is when the log matters most). */
struct line {
    FILE *f;
    char non_finite[256];
    size_t used;
};

/* v as "%.<digits>g", or "%.<digits>f" where fixed. */
static void number(struct line *l, const char *name, int fixed, int digits, double v)
{
    fprintf(l->f, ",\"%s\":", name);
    if (isfinite(v)) {
        if (fixed)
            fprintf(l->f, "%.*f", digits, v);
        else
            fprintf(l->f, "%.*g", digits, v);
        return;
    }
    fputs("null", l->f);
    const char *what = isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
    const int n = snprintf(l->non_finite + l->used, sizeof l->non_finite - l->used, "%s\"%s\":\"%s\"",
                           l->used ? "," : "", name, what);
    if (n > 0 && (size_t)n < sizeof l->non_finite - l->used)
        l->used += (size_t)n;
}

void json_log_line(FILE *f, const char *type, int epoch, int step, int steps, double loss, double acc,
                   const double *val, double ips, double lr, double secs, const double *times)
{
    if (!f)
        return;
    struct line l = {.f = f};
    fprintf(f, "{\"type\":\"%s\",\"epoch\":%d,\"step\":%d,\"steps\":%d", type, epoch, step, steps);
    number(&l, "loss", 0, 6, loss);
    number(&l, "acc", 0, 6, acc);
    if (val) {
        number(&l, "val_loss", 0, 6, val[0]);
        number(&l, "val_acc", 0, 6, val[1]);
    }
    number(&l, "images_per_sec", 1, 1, ips);
    number(&l, "lr", 0, 6, lr);
    number(&l, "seconds", 1, 3, secs);
    if (times) {
        number(&l, "step_seconds", 1, 4, times[0]);
        number(&l, "wait_seconds", 1, 4, times[1]);
        number(&l, "progress_cpu_seconds", 1, 4, times[2]);
    }
    if (l.used)
        fprintf(f, ",\"non_finite\":{%s}", l.non_finite);
    fputs("}\n", f);
    fflush(f);
}
