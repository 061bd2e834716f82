/* cpu_dnnl: what the CPU table's oneDNN users share (cpu_conv.c, cpu_infer.c): the one CPU engine, the
 * rule for failures, and the attributes of a convolution with its ReLU fused.
 *
 * A oneDNN call that must succeed and fails here is a programming error (inconsistent shapes) or memory
 * exhaustion while creating a primitive; neither leaves anything to recover, so DNNL_CHECK reports the call
 * and its status on stderr and ends the process. Calls whose failure is an answer (no implementation of
 * an algorithm on this CPU) test the status themselves. */
#ifndef TRAINER_CPU_DNNL_H
#define TRAINER_CPU_DNNL_H

#include <oneapi/dnnl/dnnl.h>

void cpu_dnnl_check(dnnl_status_t st, const char *what);
#define DNNL_CHECK(call) cpu_dnnl_check((call), #call)

/* Primitive attributes with ReLU as a fused post-op when relu (else none); the caller destroys them. */
dnnl_primitive_attr_t cpu_dnnl_attr(int relu);

/* The process's CPU engine, created on first use. Not thread-safe: the first call comes from one thread. */
dnnl_engine_t cpu_dnnl_engine(void);

#endif
