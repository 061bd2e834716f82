/* A growable string: append with printf-style calls, check once at the end. An allocation failure makes
 * every later call a no-op and sb_finish() return NULL, so callers check a single place. */
#ifndef BAI_SBUF_H
#define BAI_SBUF_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf {
    char *s;
    size_t len, cap;
    bool failed;
};

void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_puts(struct sbuf *b, const char *s);
/* Append s as one single-quoted shell word ('it'\''s'). */
void sb_shell_quote(struct sbuf *b, const char *s);
/* The string (caller frees), or NULL after an allocation failure (the buffer is freed). */
char *sb_finish(struct sbuf *b);

#endif
