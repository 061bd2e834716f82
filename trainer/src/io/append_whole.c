#include "io/append_whole.h"

#include <errno.h>
#include <unistd.h>

int append_whole(int fd, const void *buf, size_t len)
{
    const off_t before = lseek(fd, 0, SEEK_END);
    const ssize_t w = write(fd, buf, len);
    if (w == (ssize_t)len && fdatasync(fd) == 0)
        return 0;
    int why = w < 0 || w == (ssize_t)len ? errno : 0;
    /* A short write says nothing: writing the rest says why (ENOSPC). */
    if (w >= 0 && w < (ssize_t)len && write(fd, (const char *)buf + w, len - (size_t)w) < 0)
        why = errno;
    if (before >= 0 && ftruncate(fd, before) == 0)
        lseek(fd, before, SEEK_SET);
    return why ? why : EIO;
}
