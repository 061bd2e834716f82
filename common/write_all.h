/* The project's one loop that writes a whole buffer to a file descriptor: root's files in job_root
 * (node/rootfs.c), the reader's pipe (node/as_user.c), the generated batch script (spank/spank_alloc.c)
 * and the trainer's Keras files (io/keras_h5.c). */
#ifndef BAI_WRITE_ALL_H
#define BAI_WRITE_ALL_H

#include <stddef.h>

/* write(2) the n bytes at data to fd, resuming after signals and partial writes: 0 when all are written, -1
 * with errno otherwise (ENOSPC for a write that wrote nothing), so that a full disk is a failure and never a
 * file cut short. */
int bai_write_all(int fd, const void *data, size_t n);

#endif
