#include "run/checkpoint_files.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* checkpoint-{E}.h5 (epoch E done, step 0) or checkpoint-{E}-step-{S}.h5 (epoch E - 1 done, S steps of
 * epoch E): 1 with the position when `name` is one of ours, else 0. */
int checkpoint_position(const char *name, long *epochs_done, long *step)
{
    const char *p = name + strlen("checkpoint-");
    char *end;
    if (strncmp(name, "checkpoint-", strlen("checkpoint-")) != 0 || !isdigit((unsigned char)*p))
        return 0;
    errno = 0;
    const long e = strtol(p, &end, 10);
    if (errno || e < 1)
        return 0;
    if (strcmp(end, ".h5") == 0) {
        *epochs_done = e;
        *step = 0;
        return 1;
    }
    if (strncmp(end, "-step-", 6) != 0 || !isdigit((unsigned char)end[6]))
        return 0;
    p = end + 6;
    const long s = strtol(p, &end, 10);
    if (errno || s < 1 || strcmp(end, ".h5") != 0)
        return 0;
    *epochs_done = e - 1;
    *step = s;
    return 1;
}

/* --resume auto: the checkpoint furthest into the run in `dir` into path; 1 found, 0 none, -1 error. */
int checkpoint_newest(const char *dir, char *path, size_t len)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "cifar-train: --resume auto: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    long best_e = -1, best_s = -1, e, st;
    char best[256] = "";
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL)
        if (strlen(ent->d_name) < sizeof best && checkpoint_position(ent->d_name, &e, &st) &&
            (e > best_e || (e == best_e && st > best_s))) {
            best_e = e;
            best_s = st;
            snprintf(best, sizeof best, "%s", ent->d_name);
        }
    closedir(d);
    if (!best[0])
        return 0;
    if (snprintf(path, len, "%s/%s", dir, best) >= (int)len) {
        fprintf(stderr, "cifar-train: %s: path too long\n", dir);
        return -1;
    }
    return 1;
}

/* Whether epoch checkpoint `e` stays: one of the `keep` newest up to `newest`, the best, or past `newest`
 * (another run's: not this run's to judge). */
static int kept(long e, const long *epochs, size_t n, long newest, int keep, long best)
{
    size_t newer = 0;
    if (e > newest || e == newest || e == best)
        return 1;
    for (size_t i = 0; i < n; i++)
        newer += epochs[i] > e && epochs[i] <= newest;
    return newer < (size_t)keep;
}

int checkpoint_prune(const char *dir, long newest, int keep, long best)
{
    if (keep <= 0)
        return 0;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "cifar-train: warning: --keep-checkpoints: %s: %s\n", dir, strerror(errno));
        return 0;
    }
    long *epochs = NULL, e, st;
    size_t n = 0, cap = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL)
        if (checkpoint_position(ent->d_name, &e, &st) && st == 0) {
            if (n == cap) {
                long *t = realloc(epochs, (cap = cap ? 2 * cap : 64) * sizeof *epochs);
                if (!t) {
                    free(epochs);
                    closedir(d);
                    return 0;
                }
                epochs = t;
            }
            epochs[n++] = e;
        }
    rewinddir(d);
    int removed = 0;
    while ((ent = readdir(d)) != NULL) {
        if (!checkpoint_position(ent->d_name, &e, &st))
            continue;
        if (st ? e >= newest : kept(e, epochs, n, newest, keep, best))
            continue;
        if (unlinkat(dirfd(d), ent->d_name, 0) == 0)
            removed++;
        else if (errno != ENOENT)
            fprintf(stderr, "cifar-train: warning: --keep-checkpoints: cannot remove %s/%s: %s\n", dir, ent->d_name,
                    strerror(errno));
    }
    closedir(d);
    free(epochs);
    return removed;
}
