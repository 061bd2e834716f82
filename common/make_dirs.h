/* The project's one mkdir -p: the job's directories of the prolog's user child (spank/spank_user.c) and the
 * trainer's output directories (run/output_dirs.c, io/tb_events.c). */
#ifndef BAI_MAKE_DIRS_H
#define BAI_MAKE_DIRS_H

#include <sys/types.h>

/* Creates `path` and its missing parents (mode, less the umask); a directory already there is fine. 0, or -1
 * with errno (ENAMETOOLONG past 4095 bytes, ENOTDIR where path or a parent is something else). */
int bai_make_dirs(const char *path, mode_t mode);

#endif
