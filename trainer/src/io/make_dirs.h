/* make_dirs: mkdir -p. */
#ifndef TRAINER_MAKE_DIRS_H
#define TRAINER_MAKE_DIRS_H

/* Creates `path` and its missing parents (mode 0777 less the umask); an existing one is fine. 0, or -1 with
 * errno (ENAMETOOLONG past 4095 bytes). */
int make_dirs(const char *path);

#endif
