/* See make_dirs.h. */
#include "make_dirs.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

int bai_make_dirs(const char *path, mode_t mode)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, mode) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir(buf, mode) == 0)
        return 0;
    struct stat st;
    if (errno != EEXIST || stat(buf, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}
