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
/* Append s as one single-quoted shell word ('it'\''s). Whatever s holds (newlines, quotes, $, `, ;, #,
 * spaces), the shell reads back exactly s, as one word, with nothing evaluated: strings that are not shell
 * text reach a shell line through this function. */
void sb_shell_quote(struct sbuf *b, const char *s);
/* Append s as one value of an #SBATCH line: as it is when made of letters, digits, '.', '_', '-' and bytes of
 * UTF-8, else in double quotes with '"' and '\\' escaped by a backslash, which sbatch's get_argument() reads
 * back whole on every release (22.05 ends a value at an escaped space outside quotes; inside them '#' and
 * spaces are the value's). s holds no control character (a line break would end the line). */
void sb_sbatch_escape(struct sbuf *b, const char *s);
/* Append one comment line: "# ", the formatted text, '\n'. Every control character of the text (newline,
 * carriage return, tab, ...) and every backslash is written as an escape (\n, \r, \t, \xNN, \\), so no
 * value formatted into it can end the comment and start a line of code, and the line is never an #SBATCH
 * directive. */
void sb_comment(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The string (caller frees), or NULL after an allocation failure (the buffer is freed). */
char *sb_finish(struct sbuf *b);

#endif
