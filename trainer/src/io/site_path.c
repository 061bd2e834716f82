#include "io/site_path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

const char *site_path(const char *path, char *buf, size_t size)
{
    char real[PATH_MAX];
    if (!realpath(path, real) || snprintf(buf, size, "%s", real) >= (int)size)
        snprintf(buf, size, "%s", path);
    return buf;
}
