/* Error messages into a caller's buffer: the trainer's I/O functions report "what and where" this way
 * (err may be NULL or errlen 0 when the caller does not want the text). */
#ifndef TRAINER_ERRBUF_H
#define TRAINER_ERRBUF_H

#include <stddef.h>

void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
