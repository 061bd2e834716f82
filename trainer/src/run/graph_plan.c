/* CUDA graph bookkeeping: see graph_plan.h. */
#include "run/graph_plan.h"

#include <string.h>

void graph_plan_init(struct graph_plan *p, int warmup, int disabled)
{
    memset(p, 0, sizeof *p);
    p->warmup = warmup < 1 ? 1 : warmup;
    p->disabled = disabled != 0;
}

enum graph_action graph_plan_step(struct graph_plan *p, int B)
{
    if (p->disabled || B <= 0)
        return GRAPH_RUN;
    if (B < p->batch) /* the partial last batch of an epoch */
        return GRAPH_RUN;
    if (B > p->batch) {
        const int had = p->have_graph;
        p->batch = B;
        p->seen = 1; /* this step is the first plain one of the new size */
        p->have_graph = 0;
        return had ? GRAPH_INVALIDATED : GRAPH_RUN;
    }
    if (p->have_graph)
        return GRAPH_REPLAY;
    if (p->seen < p->warmup) {
        p->seen++;
        return GRAPH_RUN;
    }
    return GRAPH_CAPTURE;
}

void graph_plan_captured(struct graph_plan *p, int ok)
{
    if (ok)
        p->have_graph = 1;
    else
        p->disabled = 1;
}

int graph_plan_invalidate(struct graph_plan *p)
{
    const int had = p->have_graph;
    p->have_graph = 0;
    p->seen = 0;
    return had;
}
