/* run_state: a run's setup and teardown on one rank (run_state.h). */
#include "run/run_state.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"

static int cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return 1;
}

int run_setup(struct run *r, const struct train_options *o)
{
    memset(r, 0, sizeof *r);
    r->o = o;
    r->rank = coll_rank();
    r->size = coll_size();
    if (o->batch <= 0) {
        if (r->rank == 0)
            fprintf(stderr, "cifar-train: --batch-size must be positive\n");
        return -1;
    }
    const int cpus = cpus_available();
    r->threads = o->threads > 0 ? o->threads : cpus;
    if (r->threads > cpus) {
        fprintf(stderr, "cifar-train: warning: --threads %d is more than the %d CPU%s this process may run on "
                        "(sched_getaffinity): using %d\n", r->threads, cpus, cpus == 1 ? "" : "s", cpus);
        r->threads = cpus;
    }
    o->kernels->set_threads(r->threads);
    r->host_params = calloc(MODEL_NPARAMS, sizeof(float));
    r->host_acc = calloc(MODEL_NPARAMS, sizeof(float));
    r->labels = malloc((size_t)o->batch);
    r->aug = malloc((size_t)o->batch * sizeof *r->aug);
    const int no_host = !r->host_params || !r->host_acc || !r->labels || !r->aug;
    /* Every rank creates the step core, whatever its own allocations gave: with several ranks on the CPU
     * it is collective (coll_host_alloc), and a rank that skipped it would leave the others waiting. */
    const int no_core = step_core_create(&r->core, o->kernels, o->batch, 1e-4, r->size) != 0;
    if (no_host || no_core || batch_source_create(&r->batches, &r->core.model) != 0) {
        fprintf(stderr, "cifar-train: out of memory (%s buffers for batch %d)\n", o->kernels->name, o->batch);
        return -1;
    }
    step_core_set_graphs(&r->core, o->graphs);
    r->vote.m = &r->core.model;
    r->core.vote = stop_vote_cast;
    r->core.vote_ctx = &r->vote;
    return 0;
}

void run_free(struct run *r)
{
    batch_source_destroy(&r->batches);
    step_core_destroy(&r->core);
    cifar_free(&r->train);
    cifar_free(&r->test);
    free(r->host_params);
    free(r->host_acc);
    free(r->labels);
    free(r->order);
    free(r->aug);
    if (r->json)
        fclose(r->json);
    if (r->watching)
        watch_close(&r->watch);
    if (r->export.steps)
        step_export_close(&r->export);
}
