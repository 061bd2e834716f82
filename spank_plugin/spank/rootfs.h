/* Root's side of the node: the only file-system work the plugin does with root's rights, all of it inside
 * the admin's job_root, a tree that root owns and nobody else can write. Every call works relative to a
 * directory fd (openat, mkdirat, fchown, renameat2, unlinkat), never follows a symbolic link, and opens
 * files O_NONBLOCK so that a FIFO cannot stall slurmd. What lies in the user's places (the job directory's
 * contents, the log directory, the shares) is never touched here: a process that has become the user does
 * that (bai_spawn_as_user in spank_common.h). See SECURITY.md.
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

/* Make the directory `name` in root_fd for uid/gid, mode 0700. It appears only once it is theirs: it is made
 * under a private name, handed over through its fd, then renamed into place without replacing. An existing
 * `name` is accepted when it is a real directory owned by uid (another slurmd on the same host made it). */
int bai_job_dir_create(int root_fd, const char *name, uid_t uid, gid_t gid, char *why);

/* Is `name` in root_fd a real directory owned by uid? 0 if so. */
int bai_job_dir_check(int root_fd, const char *name, uid_t uid, char *why);

/* The name, in job_root, of the file in which the prolog records why `node` could not be prepared for the
 * job: "<jobid>.prolog-failed-<node>". Fails (-1) for a node name that is not a plain file name. */
int bai_marker_name(char *out, size_t size, unsigned jobid, const char *node);

/* Replace the marker `name` in root_fd by one holding `text` (mode 0600, root's: job_root is world-listable
 * and the reason a job failed is its user's business; the task reads it while still root). */
int bai_marker_write(int root_fd, const char *name, const char *text);

/* Read the marker `name` (a regular file owned by root) into buf. 1 when found, 0 when absent, -1 when
 * something else sits there (why says what). */
int bai_marker_read(int root_fd, const char *name, char *buf, size_t size, char *why);

/* Remove everything inside the directory `dir_fd` without following symbolic links or crossing into
 * another file system (a mount point inside stays, and so does its parent), whatever modes the owner left
 * (directories are opened up to 0700 first) and however deep the tree (what lies deeper than a bound is
 * moved up to dir_fd and removed in a later pass: fds and stack stay bounded). Runs as the directory's
 * owner. 0 when the directory is empty, -1 otherwise (errno of the first failure). Closes nothing. */
int bai_remove_contents(int dir_fd);

#endif
