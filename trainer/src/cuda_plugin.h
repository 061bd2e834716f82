/* cuda_plugin: the CUDA kernels table (kernels_cuda.h) lives in libcifar_train_cuda.so, loaded on demand,
 * so one cifar-train binary runs on CPU-only nodes without libcudart or libcublas and uses GPUs where they
 * are (as libcollective loads its NCCL plugin).
 *
 * cuda_plugin_load() looks for the library at $CIFAR_TRAIN_CUDA_LIBRARY, then next to the executable
 * (<bin>/../lib and <bin>), then on the loader's path. It loads once; later calls return the same result.
 * NULL means no CUDA here, with the reason in why (may be NULL). */
#ifndef TRAINER_CUDA_PLUGIN_H
#define TRAINER_CUDA_PLUGIN_H

#include <stddef.h>

#include "kernels.h"

struct cuda_plugin {
    int (*device_count)(char *why, size_t len); /* kernels_cuda_device_count */
    int (*open)(int device, char *err, size_t len); /* kernels_cuda_open */
    void (*close)(void);                        /* kernels_cuda_close */
    void (*set_tf32)(int on);                   /* kernels_cuda_set_tf32 */
    const struct kernels *table;                /* &kernels_cuda */
};

const struct cuda_plugin *cuda_plugin_load(char *why, size_t len);

#endif
