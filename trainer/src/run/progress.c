#include "run/progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_start(struct progress *p, FILE *out, int target)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->target = target;
    /* mpirun hands ranks a pseudo-terminal even when its own output goes to a file: under a launcher
     * only a real terminal on mpirun's side could show in-place redraws, and that cannot be told from
     * here, so launched processes print lines. */
    p->tty = isatty(fileno(out)) && !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK");
    p->start = progress_now();
    p->last_draw = p->start;
}

void progress_value(char *buf, size_t len, const char *name, double value)
{
    size_t used = strlen(buf);
    if (used >= len)
        return;
    snprintf(buf + used, len - used, fabs(value) > 1e-3 ? " - %s: %.4f" : " - %s: %.4e", name, value);
}

static void format_eta(char *buf, size_t len, double eta)
{
    long s = (long)eta;
    if (s > 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, (s % 3600) / 60, s % 60);
    else if (s > 60)
        snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
    else
        snprintf(buf, len, "%lds", s);
}

static int due(const struct progress *p, int current, double now)
{
    return current < p->target && now - p->last_draw >= (p->tty ? 0.1 : PROGRESS_FILE_INTERVAL);
}

int progress_due(const struct progress *p, int current) { return due(p, current, progress_now()); }

void progress_update(struct progress *p, int current, const char *values, int final)
{
    const double now = progress_now();
    if (!final && !due(p, current, now))
        return;
    p->last_draw = now;
    char line[512];
    int digits = snprintf(NULL, 0, "%d", p->target);
    int n = snprintf(line, sizeof line, "%*d/%d [", digits, current, p->target);
    int width = p->target > 0 ? (int)(30.0 * current / p->target) : 30;
    for (int i = 0; i < 30; i++)
        line[n++] = i < width - 1 ? '=' : i == width - 1 ? (current < p->target ? '>' : '=') : '.';
    line[n++] = ']';
    line[n] = 0;
    const double elapsed = now - p->start, per_step = current > 0 ? elapsed / current : 0.0;
    char info[64];
    if (current < p->target) {
        char eta[32];
        format_eta(eta, sizeof eta, per_step * (p->target - current));
        snprintf(info, sizeof info, " - ETA: %s", eta);
    } else if (per_step >= 1.0)
        snprintf(info, sizeof info, " - %.0fs %.0fs/step", elapsed, per_step);
    else if (per_step >= 1e-3)
        snprintf(info, sizeof info, " - %.0fs %.0fms/step", elapsed, per_step * 1e3);
    else
        snprintf(info, sizeof info, " - %.0fs %.0fus/step", elapsed, per_step * 1e6);
    char full[1024];
    int w = snprintf(full, sizeof full, "%s%s%s", line, info, values ? values : "");
    if (p->tty) {
        /* Pad with spaces over a longer previous line; newline only at the end. */
        int pad = p->drawn_width > w ? p->drawn_width - w : 0;
        fprintf(p->out, "\r%s%*s", full, pad, "");
        p->drawn_width = w;
        if (final) {
            fputc('\n', p->out);
            p->drawn_width = 0;
        }
    } else
        fprintf(p->out, "%s\n", full);
    fflush(p->out);
}
