/* The user's side of the prolog and epilog: functions for bai_run_as_user(), run in a child that has fully
 * become the job's user (bai_run_as_user, as_user.h). Root never calls them itself. */
#ifndef BAI_SPANK_USER_H
#define BAI_SPANK_USER_H

#include "jobfile/batchai_jobfile.h"

/* What the prolog's user child makes. Pointers stay the caller's. */
struct bai_user_setup {
    const struct bai_plan *plan; /* NULL: the log directory only (the job could not be prepared) */
    const char *jobid;           /* replaces "%j" in the plan's paths */
    const char *node;            /* this node's name, for private file names */
    const char *log_dir;         /* the log directory, expanded; NULL: none known */
    int status_fd;               /* a failure's "<path>: <strerror>" is written here */
};

/* Make the log directory, then (with a plan) the mount links <job_dir>/mounts/<relativeMountPath> -> <site
 * path> and unmanaged mount points, the output and temp directories, and <job_dir>/secrets.env (0600,
 * written under a private name and renamed into place). Returns 0, or 1 with the reason on status_fd. */
int bai_user_setup(void *arg);

/* Remove the contents of the directory `arg` (a path in the trusted job_root) by fds: no link followed, no
 * mount crossed. Returns 0 when all went (or the directory was already gone), 1 otherwise. */
int bai_user_remove_dir(void *arg);

#endif
