/* output_dirs: the run's output directories, made and proven writable (output_dirs.h). */
#include "run/output_dirs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "io/atomic_file.h"
#include "io/keras_h5.h"
#include "make_dirs.h"
#include "run/any_failed.h"

static int prepare_dir(const char *opt, const char *dir)
{
    char err[1024], probe[4200];
    struct stat st;
    if (bai_make_dirs(dir, 0777) != 0) {
        if (errno == ENOTDIR && stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
            fprintf(stderr, "cifar-train: %s %s: not a directory\n", opt, dir);
        else
            fprintf(stderr, "cifar-train: %s %s: cannot create directory: %s\n", opt, dir, strerror(errno));
        return -1;
    }
    const int removed = atomic_file_cleanup_dir(dir);
    if (removed > 0)
        printf("Removed %d stale temporary file%s in %s (left by a writer that was killed)\n", removed,
               removed == 1 ? "" : "s", dir);
    struct atomic_file af;
    snprintf(probe, sizeof probe, "%s/.cifar-train-probe", dir);
    if (atomic_file_begin(&af, probe, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: %s %s: not writable: %s\n", opt, dir, err);
        return -1;
    }
    atomic_file_abort(&af);
    return 0;
}

int output_dirs_prepare(const struct train_options *o, int rank)
{
    int failed = 0;
    if (rank == 0) {
        char models[4096];
        snprintf(models, sizeof models, "%s/%s", o->dir, KERAS_MODEL_DIR);
        failed = prepare_dir("--dir", models) != 0 || prepare_dir("--checkpoint-dir", o->checkpoint_dir) != 0;
        fflush(stdout);
    }
    return any_failed(failed) ? -1 : 0;
}
