/* Growable string: see sbuf.h. */
#include "sbuf.h"

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
    if (n < 0 || !reserve(b, (size_t)n))
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

static void sb_putc(struct sbuf *b, char c)
{
    if (!reserve(b, 1))
        return;
    b->s[b->len++] = c;
    b->s[b->len] = '\0';
}

void sb_shell_quote(struct sbuf *b, const char *s)
{
    /* Inside single quotes nothing is special but the closing quote; a quote of s ends the quoted part,
     * adds an escaped quote and opens a new part: it'\''s. */
    sb_putc(b, '\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            sb_puts(b, "'\\''");
        else
            sb_putc(b, *p);
    }
    sb_putc(b, '\'');
}

void sb_sbatch_escape(struct sbuf *b, const char *s)
{
    bool plain = true;
    for (const unsigned char *c = (const unsigned char *)s; *c && plain; c++)
        plain = (*c >= '0' && *c <= '9') || ((*c | 0x20) >= 'a' && (*c | 0x20) <= 'z') || *c >= 0x80 ||
                strchr("._-", *c);
    if (plain) {
        sb_puts(b, s);
        return;
    }
    sb_putc(b, '"');
    for (const char *c = s; *c; c++) {
        if (*c == '"' || *c == '\\')
            sb_putc(b, '\\');
        sb_putc(b, *c);
    }
    sb_putc(b, '"');
}

void sb_comment(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    char *text;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    /* "# ", never "#" and the text: a line that starts "#SBATCH" is a directive to sbatch. */
    sb_puts(b, "# ");
    for (const char *p = text; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\\')
            sb_puts(b, "\\\\");
        else if (c == '\n')
            sb_puts(b, "\\n");
        else if (c == '\r')
            sb_puts(b, "\\r");
        else if (c == '\t')
            sb_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f)
            sb_printf(b, "\\x%02x", c);
        else
            sb_putc(b, (char)c);
    }
    sb_putc(b, '\n');
    free(text);
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
