/* Loading the CUDA kernels table: see cuda_plugin.h. */
#include "cuda/cuda_plugin.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CUDA_LIBRARY "libcifar_train_cuda.so"

static void *open_library(char *why, size_t len)
{
    const char *env = getenv("CIFAR_TRAIN_CUDA_LIBRARY");
    char exe[PATH_MAX], path[PATH_MAX + 64];
    ssize_t n;
    void *h;

    if (env && *env) {
        if ((h = dlopen(env, RTLD_NOW | RTLD_LOCAL)))
            return h;
        snprintf(why, len, "CIFAR_TRAIN_CUDA_LIBRARY=%.200s: %.200s", env, dlerror());
        return NULL;
    }
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            for (int beside = 0; beside < 2; beside++) {
                snprintf(path, sizeof path, "%s%s/" CUDA_LIBRARY, exe, beside ? "" : "/../lib");
                if (access(path, F_OK) != 0)
                    continue;
                if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
                    return h;
                snprintf(why, len, "%.200s: %.200s", path, dlerror());
                return NULL;
            }
        }
    }
    if ((h = dlopen(CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL)))
        return h;
    snprintf(why, len, "%s is not installed next to cifar-train (it is built where nvcc and cuBLAS are)",
             CUDA_LIBRARY);
    return NULL;
}

const struct cuda_plugin *cuda_plugin_load(char *why, size_t len)
{
    static const struct cuda_plugin *plugin;
    static int state; /* 0 not tried, 1 loaded, -1 failed */
    static char reason[512];
    void *h;

    if (state == 0) {
        state = -1;
        if ((h = open_library(reason, sizeof reason))) {
            cuda_plugin_getter *get = (cuda_plugin_getter *)dlsym(h, CUDA_PLUGIN_GETTER);
            struct link_map *lm = NULL;
            const char *file = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && *lm->l_name ? lm->l_name : CUDA_LIBRARY;
            plugin = get ? get() : NULL;
            if (!plugin)
                snprintf(reason, sizeof reason, "%s has no %s() (a library of another build: install the one "
                         "built with this cifar-train)", file, CUDA_PLUGIN_GETTER);
            else if (plugin->abi != CUDA_PLUGIN_ABI)
                snprintf(reason, sizeof reason, "%s has CUDA table ABI %d, this cifar-train needs ABI %d (install "
                         "the library built with this cifar-train)", file, plugin->abi, CUDA_PLUGIN_ABI);
            else if (!plugin->device_count || !plugin->open || !plugin->close || !plugin->set_tf32 || !plugin->table ||
                     !plugin->describe)
                snprintf(reason, sizeof reason, "%s: %s() left an entry point NULL", file, CUDA_PLUGIN_GETTER);
            else
                state = 1;
        }
    }
    if (state == 1)
        return plugin;
    if (why && len)
        snprintf(why, len, "%s", reason);
    return NULL;
}
