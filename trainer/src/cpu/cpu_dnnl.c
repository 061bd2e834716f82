#include "cpu/cpu_dnnl.h"

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

dnnl_primitive_attr_t cpu_dnnl_attr(int relu)
{
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    if (relu) {
        dnnl_post_ops_t ops;
        DNNL_CHECK(dnnl_post_ops_create(&ops));
        DNNL_CHECK(dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
        DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, ops));
        DNNL_CHECK(dnnl_post_ops_destroy(ops));
    }
    return attr;
}
