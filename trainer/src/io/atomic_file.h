/* atomic_file: replace a file so that, whatever moment the process dies, the path holds either the old
 * complete file or the new complete file, never a mix or a truncated one.
 *
 * Protocol (POSIX rename(2) is atomic within a directory):
 *   1. atomic_file_begin() creates an empty temporary file in the target's own directory (same file
 *      system, so the rename cannot become a copy), named
 *          <dir>/.<base>.tmp.<host>.<pid>.XXXXXX
 *      and keeps a descriptor on it. The writer then fills `tmp_path` by any means (stdio, HDF5's
 *      H5Fcreate(tmp_path, H5F_ACC_TRUNC, ...) + H5Fclose, write(2) on `fd`...).
 *   2. atomic_file_commit() fsyncs the temporary file (through `fd`, which reaches the data whatever
 *      descriptor wrote it), renames it over the target, then fsyncs the directory so the rename itself is
 *      durable. The file is created with mode 0644 (less the umask), not mkstemp's 0600.
 *   3. atomic_file_abort() (on any error before commit) unlinks the temporary file.
 *
 * Temporary files left by a process killed between begin and commit are removed by the next
 * atomic_file_begin() on the same target: it deletes every "<dir>/.<base>.tmp.<host>.<pid>.*" whose host is
 * this host and whose pid no longer exists. Temporaries of other hosts (a shared file system) and of live
 * processes are never touched, so two writers never delete each other's work; a temporary whose host
 * never writes that target again stays (hidden dot file, named after its target) until removed by hand.
 *
 * Errors: functions return 0 on success and -1 on failure, with a message naming the path and the failing
 * call (strerror) in err[errlen] when err is not NULL. Not thread-safe per object; distinct objects are
 * independent. */
#ifndef TRAINER_ATOMIC_FILE_H
#define TRAINER_ATOMIC_FILE_H

#include <stddef.h>

struct atomic_file {
    char *path;     /* the target, as given */
    char *tmp_path; /* the temporary file being written */
    int fd;         /* open read-write descriptor on tmp_path, -1 once closed */
};

/* Start replacing `path`. On success af->tmp_path exists (empty) and must be ended by
 * atomic_file_commit() or atomic_file_abort(). On failure nothing is left behind and af needs no cleanup. */
int atomic_file_begin(struct atomic_file *af, const char *path, char *err, size_t errlen);

/* fsync + rename over af->path + fsync of the directory, then release af. On failure the temporary file
 * is removed and the target left as it was (old file, or absent); af is released either way. */
int atomic_file_commit(struct atomic_file *af, char *err, size_t errlen);

/* Give up: remove the temporary file and release af. Safe on a zeroed struct. */
void atomic_file_abort(struct atomic_file *af);

/* Remove stale temporaries of `path` (this host, dead pid) as described above; atomic_file_begin() calls
 * it. Returns how many were removed. */
int atomic_file_cleanup_stale(const char *path);

/* The same for every target in `dir` (cifar-train calls it on its output directories at start, so that a
 * writer killed mid-write on this host leaves nothing behind for long). Returns how many were removed. */
int atomic_file_cleanup_dir(const char *dir);

#endif
