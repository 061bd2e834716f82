/* See write_all.h. */
#include "write_all.h"

#include <errno.h>
#include <unistd.h>

int bai_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}
