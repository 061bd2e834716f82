/* Stand-ins for a libcifar_train_cuda.so of another build, for test_cuda_abi.sh: built with
 * -DSTUB_OTHER_ABI, the getter reports the next ABI number (and NULL entry points, which the loader must not
 * reach); without it, the library has no getter at all, only the raw table symbol older builds exported. */
#include <stddef.h>

#include "cuda/cuda_plugin.h"

#ifdef STUB_OTHER_ABI
const struct cuda_plugin *cifar_train_cuda_plugin(void)
{
    static const struct cuda_plugin plugin = {.abi = CUDA_PLUGIN_ABI + 1};
    return &plugin;
}
#else
const struct kernels kernels_cuda = {.name = "stub"};
#endif
