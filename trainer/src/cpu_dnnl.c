#include "cpu_dnnl.h"

#include <stdio.h>
#include <stdlib.h>

void cpu_dnnl_check(dnnl_status_t st, const char *what)
{
    if (st != dnnl_success) {
        fprintf(stderr, "cifar-train: oneDNN %s failed with status %d\n", what, (int)st);
        abort();
    }
}

dnnl_engine_t cpu_dnnl_engine(void)
{
    static dnnl_engine_t engine;
    if (!engine)
        DNNL_CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    return engine;
}
