/* Shell and sbatch text into a growable string: see sbuf.h. */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
