/* Root's side of the node: the only file-system work the plugin does with root's rights, all of it inside
 * the admin's job_root, a tree that root owns and nobody else can write. Every call works relative to a
 * directory fd (openat, mkdirat, fchown, renameat2, unlinkat), never follows a symbolic link, and opens
 * files O_NONBLOCK so that a FIFO cannot stall slurmd. What lies in the user's places (the job directory's
 * contents, the log directory, the shares) is never touched here: a process that has become the user does
 * that (bai_spawn_as_user in as_user.h). See SECURITY.md.
 *
 * Functions return 0 (or an fd) on success and -1 with a one-line reason in `why` (at most BAI_WHY_MAX
 * bytes, naming the path) on failure; none logs. */
#ifndef BAI_ROOTFS_H
#define BAI_ROOTFS_H

#include <stdbool.h>
#include <sys/types.h>

#define BAI_WHY_MAX 512

/* Open the directory `path` (absolute) for use as a trusted root: every component from / down must be a
 * real directory (no symbolic link) owned by root and not writable by group or others. With `create`,
 * missing components are made (mode 0755, root) under such parents. Returns an O_DIRECTORY fd. */
int bai_trusted_dir_open(const char *path, bool create, char *why);

/* The same for a scratch base such as /tmp/batchai (the job_temp setting), made when missing, except that a
 * parent may also be a root-owned sticky directory that users can write (/tmp): root's entries there cannot
 * be renamed or removed by anyone else. The directory itself, and whatever follows a sticky parent, must be
 * root's and writable by root alone: a name a user took first (a directory of theirs, a link, a FIFO) is
 * refused, never used. */
int bai_scratch_dir_open(const char *path, char *why);

/* bai_scratch_dir_open for the nodes' own use (slurmd's start, the prolog), which recovers from a name a user
 * took first instead of refusing every job until an admin removes it: a user's entry under a sticky parent
 * (their directory, link or FIFO) is renamed aside in that parent, untouched, to <name>.taken-by-uid-<uid>.<time>
 * and root makes its own. `moved` (BAI_WHY_MAX bytes) then says what was moved where, else is "". A mount
 * point, or anything of root's that is not a root directory, is still refused. */
int bai_scratch_dir_reclaim(const char *path, char *moved, char *why);

/* How the prolog refuses a job_temp that bai_scratch_dir_open refused (its path, then `why`), and so how
 * batchai-job check-site words the same finding. */
#define BAI_JOB_TEMP_REFUSED "job_temp %s cannot be used: %s (it must be root's and writable by root alone; see SECURITY.md)"

/* Make the directory `name` in root_fd for uid/gid, mode 0700. It appears only once it is theirs: it is made
 * under a private name, handed over through its fd, then renamed into place without replacing. An existing
 * `name` is accepted when it is a real directory owned by uid (another slurmd on the same host made it). */
int bai_job_dir_create(int root_fd, const char *name, uid_t uid, gid_t gid, char *why);

/* Is `name` in root_fd a real directory owned by uid? 0 if so. */
int bai_job_dir_check(int root_fd, const char *name, uid_t uid, char *why);

/* The files root keeps in job_root for a job on one node, named "<jobid>.<kind>-<node>": */
#define BAI_NODE_FILE_FAILED "prolog-failed" /* why the prolog could not prepare the node */
#define BAI_NODE_FILE_JOB "job"              /* the job file as the prolog read and verified it, which the
                                              * tasks use instead of reading the user's path again */
#define BAI_NODE_FILE_SOURCE "source"        /* what that copy was loaded with, each value ended by a NUL: the job
                                              * file's absolute path, the --batchai-name, --batchai-share and
                                              * --batchai-cluster values ("" when not given): what a step started without the
                                              * options (srun --jobid --overlap) goes by */

/* Write that name for `node` to out. Fails (-1) for a node name that is not a plain file name. */
int bai_node_file_name(char *out, size_t size, unsigned jobid, const char *kind, const char *node);

/* The node's part of `name` when it is such a file of the job's, else NULL. */
const char *bai_node_file_node(const char *name, unsigned jobid, const char *kind);

/* Replace the file `name` in root_fd by one holding the len bytes at data (mode 0600, root's: job_root is
 * world-listable, and why a job failed, or what its file says, is its user's business). It is written under
 * a private name, synced and renamed into place, so a reader finds the old file or the whole new one, and a
 * link or a FIFO in its place is replaced, never written through. */
int bai_root_file_write(int root_fd, const char *name, const void *data, size_t len, char *why);

/* Read the file `name` (a regular file owned by root, at most max bytes) into a new NUL-terminated buffer
 * (*data, *len; free it). 1 when read, 0 when absent, -1 when something else sits there or it cannot be
 * read whole (why says what). */
int bai_root_file_read(int root_fd, const char *name, size_t max, char **data, size_t *len, char *why);

/* Remove everything inside the directory `dir_fd` without following symbolic links or crossing into
 * another file system (a mount point inside stays, and so does its parent), whatever modes the owner left
 * (directories are opened up to 0700 first) and however deep the tree (what lies deeper than a bound is
 * moved up to dir_fd and removed in a later pass: fds and stack stay bounded). Runs as the directory's
 * owner. 0 when the directory is empty, -1 otherwise (errno of the first failure). Closes nothing. */
int bai_remove_contents(int dir_fd);

#endif
