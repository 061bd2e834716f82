/* train_data: the data directory, verified and loaded (train_data.h). */
#include "run/train_data.h"

#include <stdio.h>
#include <stdlib.h>

#include "collective.h"
#include "run/any_failed.h"

int train_data_dir(const struct train_options *o, char *dir, size_t len)
{
    int failed = 0;
    if (!o->download) {
        if (!o->data) {
            if (coll_rank() == 0)
                fprintf(stderr, "cifar-train: no data: pass --data DIR (a cifar-10-batches-bin directory) "
                                "or --download\n");
            return -1;
        }
        snprintf(dir, len, "%s", o->data);
        return 0;
    }
    char parent[4096];
    const char *home = getenv("HOME");
    if (o->data)
        snprintf(parent, sizeof parent, "%s", o->data);
    else
        snprintf(parent, sizeof parent, "%s/.keras/datasets", home ? home : ".");
    if (coll_local_rank() == 0) {
        char err[1024];
        if (cifar_download(parent, dir, len, err, sizeof err) != 0) {
            fprintf(stderr, "cifar-train: %s\n", err);
            failed = 1;
        }
    }
    if (any_failed(failed))
        return -1;
    if (snprintf(dir, len, "%s/%s", parent, CIFAR_ARCHIVE_DIR) >= (int)len) {
        fprintf(stderr, "cifar-train: %s: path too long\n", parent);
        return -1;
    }
    return 0;
}

int train_data_load(const struct train_options *o, struct cifar_set *train, struct cifar_set *test)
{
    char dir[4096], err[1024];
    if (train_data_dir(o, dir, sizeof dir) != 0)
        return -1;
    int failed = 0;
    if (cifar_verify(dir, err, sizeof err) != 0 || cifar_load_train(dir, o->limit_train, train, err, sizeof err) != 0 ||
        cifar_load_test(dir, o->limit_test, test, err, sizeof err) != 0) {
        fprintf(stderr, "cifar-train: %s\n", err);
        failed = 1;
    } else if (train->n == 0 || test->n == 0) {
        fprintf(stderr, "cifar-train: %s: empty training or test set\n", dir);
        failed = 1;
    }
    return any_failed(failed) ? -1 : 0;
}
