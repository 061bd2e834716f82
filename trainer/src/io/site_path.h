/* site_path: a path as it stays after the job: through the links on the way (a Batch AI job's mount link
 * .../jobs/<id>/mounts/<share> -> the site's share, removed when the job ends), for the messages that name a
 * file a user opens later. */
#ifndef TRAINER_SITE_PATH_H
#define TRAINER_SITE_PATH_H

#include <stddef.h>

/* The resolved path of `path` into buf, or `path` as given when it cannot be resolved (it is gone, or too
 * long); returns buf. */
const char *site_path(const char *path, char *buf, size_t size);

#endif
