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

void json_log_line(FILE *f, const struct json_line *line)
{
    if (!f)
        return;
    struct line l = {.f = f};
    fprintf(f, "{\"type\":\"%s\",\"epoch\":%d,\"step\":%d,\"steps\":%d", line->type, line->epoch, line->step,
            line->steps);
    number(&l, "loss", 0, 6, line->loss);
    number(&l, "acc", 0, 6, line->acc);
    if (line->validated) {
        number(&l, "val_loss", 0, 6, line->val_loss);
        number(&l, "val_acc", 0, 6, line->val_acc);
    }
    number(&l, "images_per_sec", 1, 1, line->images_per_sec);
    number(&l, "lr", 0, 6, line->lr);
    number(&l, "seconds", 1, 3, line->seconds);
    if (line->times) {
        number(&l, "step_seconds", 1, 4, line->times->step_seconds);
        number(&l, "wait_seconds", 1, 4, line->times->wait_seconds);
        number(&l, "progress_cpu_seconds", 1, 4, line->times->progress_cpu_seconds);
    }
    if (l.used)
        fprintf(f, ",\"non_finite\":{%s}", l.non_finite);
    fputs("}\n", f);
    fflush(f);
}
