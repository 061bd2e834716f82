/* strbuf: a growable string, appended to with printf-style calls and checked once at the end. An allocation
 * failure makes every later call a no-op and sb_finish() return NULL, so callers check a single place. The
 * job-file library renders scripts with it (and adds shell quoting: spank_plugin/jobfile/sbuf.h); the
 * trainer writes the JSON of its Keras files with it (trainer/src/io/keras_h5.c). */
#ifndef BAI_STRBUF_H
#define BAI_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf {
    char *s;
    size_t len, cap;
    bool failed;
};

void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_puts(struct sbuf *b, const char *s);
void sb_putc(struct sbuf *b, char c);
/* The string (caller frees), or NULL after an allocation failure (the buffer is freed). */
char *sb_finish(struct sbuf *b);

#endif
