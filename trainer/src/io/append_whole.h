/* append_whole: one record (a CSV row, a TFRecord) appended to a log file whole or not at all. */
#ifndef TRAINER_APPEND_WHOLE_H
#define TRAINER_APPEND_WHOLE_H

#include <stddef.h>

/* Appends len bytes to fd in one write(2) and fdatasyncs. On failure (a full disk) the file is cut back to
 * its length before, so that no half record stays for a reader to trip on. 0, or the errno that says why
 * (EIO when a short write gave none). */
int append_whole(int fd, const void *buf, size_t len);

#endif
