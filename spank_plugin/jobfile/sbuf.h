/* sbuf: shell and sbatch text appended to a growable string (struct sbuf and its printf-style calls:
 * common/strbuf.h), for the scripts the job-file library renders. */
#ifndef BAI_SBUF_H
#define BAI_SBUF_H

#include "batchai_jobfile.h" /* sb_shell_quote */
#include "strbuf.h"

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

#endif
