/* cuda_plugin: the CUDA kernels table (kernels_cuda.h) lives in libcifar_train_cuda.so, loaded on demand,
 * so one cifar-train binary runs on CPU-only nodes without libcudart or libcublas and uses GPUs where they
 * are (as libcollective loads its NCCL plugin).
 *
 * The library exports one symbol, CUDA_PLUGIN_GETTER, which returns its struct cuda_plugin; `abi` comes
 * first and is checked before anything else is read, so a library of another build (whose struct kernels,
 * engines or entry points may differ) is refused with both numbers instead of being called.
 *
 * cuda_plugin_load() looks for the library at $CIFAR_TRAIN_CUDA_LIBRARY, then next to the executable
 * (<bin>/../lib and <bin>), then on the loader's path. It loads once; later calls return the same result.
 * NULL means no CUDA here, with the reason in why (may be NULL). */
#ifndef TRAINER_CUDA_PLUGIN_H
#define TRAINER_CUDA_PLUGIN_H

#include <stddef.h>

#include "core/kernels.h"

/* Bump on any change to struct kernels, the engines it points to (input_ring.h, kernels.h), struct
 * cuda_plugin, or the meaning of their calls. */
#define CUDA_PLUGIN_ABI 3
#define CUDA_PLUGIN_GETTER "cifar_train_cuda_plugin"

struct cuda_plugin {
    int abi; /* CUDA_PLUGIN_ABI as the library was built; first, and read before the rest */
    int (*device_count)(char *why, size_t len); /* kernels_cuda_device_count */
    int (*open)(int device, char *err, size_t len); /* kernels_cuda_open */
    void (*close)(void);                        /* kernels_cuda_close */
    void (*set_tf32)(int on);                   /* kernels_cuda_set_tf32 */
    const struct kernels *table;                /* &kernels_cuda */
    int (*describe)(int device, char *out, size_t len); /* kernels_cuda_describe */
};

#ifdef __cplusplus
extern "C" {
#endif
/* The getter the library defines (kernels_cuda.cu) and cuda_plugin_load finds by CUDA_PLUGIN_GETTER. */
typedef const struct cuda_plugin *cuda_plugin_getter(void);
cuda_plugin_getter cifar_train_cuda_plugin;

const struct cuda_plugin *cuda_plugin_load(char *why, size_t len);
#ifdef __cplusplus
}
#endif

#endif
