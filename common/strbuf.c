/* Growable string: see strbuf.h. */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct sbuf *b, size_t extra)
{
    size_t need = b->len + extra + 1, cap = b->cap ? b->cap : 256;
    char *grown;

    if (b->failed)
        return false;
    if (need <= b->cap)
        return true;
    while (cap < need)
        cap *= 2;
    grown = realloc(b->s, cap);
    if (!grown) {
        b->failed = true;
        return false;
    }
    b->s = grown;
    b->cap = cap;
    return true;
}

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sb_puts(struct sbuf *b, const char *s)
{
    size_t n = strlen(s);

    if (!reserve(b, n))
        return;
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void sb_putc(struct sbuf *b, char c)
{
    if (!reserve(b, 1))
        return;
    b->s[b->len++] = c;
    b->s[b->len] = '\0';
}

char *sb_finish(struct sbuf *b)
{
    char *s;

    if (b->failed || !reserve(b, 0)) {
        free(b->s);
        memset(b, 0, sizeof *b);
        return NULL;
    }
    s = b->s;
    s[b->len] = '\0'; /* a buffer never written has its first allocation but no terminator yet */
    memset(b, 0, sizeof *b);
    return s;
}
