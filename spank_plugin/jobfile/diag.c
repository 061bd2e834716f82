/* Diagnostics list: see batchai_jobfile.h. */
#include "batchai_jobfile.h"

#include <stdlib.h>
#include <string.h>

void bai_diag_vadd(struct bai_diag *d, const char *path, const char *fmt, va_list ap)
{
    char text[1024];
    int n = 0;

    if (d->count >= BAI_DIAG_MAX) {
        d->dropped++;
        return;
    }
    if (path && *path)
        n = snprintf(text, sizeof text, "%s: ", path);
    if (n < 0 || (size_t)n >= sizeof text)
        n = 0;
    vsnprintf(text + n, sizeof text - (size_t)n, fmt, ap);
    d->msg[d->count] = strdup(text);
    if (d->msg[d->count])
        d->count++;
    else
        d->dropped++;
}

void bai_diag_add(struct bai_diag *d, const char *path, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    bai_diag_vadd(d, path, fmt, ap);
    va_end(ap);
}

size_t bai_diag_total(const struct bai_diag *d)
{
    return d->count + d->dropped;
}

void bai_diag_each(const struct bai_diag *d, void (*fn)(void *arg, const char *msg), void *arg)
{
    for (size_t i = 0; i < d->count; i++)
        fn(arg, d->msg[i]);
    if (d->dropped) {
        char more[64];
        snprintf(more, sizeof more, "... and %zu more", d->dropped);
        fn(arg, more);
    }
}

struct print_arg {
    FILE *f;
    const char *prefix;
};

static void print_one(void *arg, const char *msg)
{
    const struct print_arg *p = arg;
    fprintf(p->f, "%s%s\n", p->prefix ? p->prefix : "", msg);
}

void bai_diag_print(const struct bai_diag *d, FILE *f, const char *prefix)
{
    struct print_arg p = { f, prefix };
    bai_diag_each(d, print_one, &p);
}

void bai_diag_free(struct bai_diag *d)
{
    for (size_t i = 0; i < d->count; i++)
        free(d->msg[i]);
    memset(d, 0, sizeof *d);
}
