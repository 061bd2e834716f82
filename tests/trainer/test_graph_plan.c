/* graph_plan's rules (graph_plan.h) over the step sequences a run produces: epochs with a partial last
 * batch, a size change, an invalidation, a failed capture, graphs turned off. */
#include <stdio.h>
#include <string.h>

#include "../check.h"

#include "run/graph_plan.h"

/* Runs sizes[] through the plan and compares the actions with the letters of want: R run, C capture
 * (reported ok unless fail_capture), P replay, I invalidated. */
static void run(const char *name, int warmup, int disabled, const int *sizes, int n, const char *want, int fail_capture)
{
    struct graph_plan p;
    char got[64] = "";
    graph_plan_init(&p, warmup, disabled);
    for (int i = 0; i < n; i++) {
        const enum graph_action a = sizes[i] < 0 ? (graph_plan_invalidate(&p) ? GRAPH_INVALIDATED : GRAPH_RUN)
                                                 : graph_plan_step(&p, sizes[i]);
        got[i] = "RCPI"[a];
        if (a == GRAPH_CAPTURE)
            graph_plan_captured(&p, !fail_capture);
    }
    CHECK(strcmp(got, want) == 0, "%s: %s, wanted %s", name, got, want);
}

int main(void)
{
    /* Two epochs of 32, 32, 32, 32, 7: two warm-up steps, a capture, replays; the 7s run plain. */
    const int epochs[] = {32, 32, 32, 32, 7, 32, 32, 32, 32, 7};
    run("epochs with a partial tail, warmup 2", 2, 0, epochs, 10, "RRCPRPPPPR", 0);
    run("warmup 1", 1, 0, epochs, 10, "RCPPRPPPPR", 0);
    /* A size change upward drops the graph; the new size warms up (the step itself counts) and captures. */
    const int grow[] = {8, 8, 8, 16, 16, 16, 8, 16};
    run("batch size grows", 2, 0, grow, 8, "RRCIRCRP", 0);
    /* Invalidation (-1 here): the next full step warms up again, then captures. */
    const int inval[] = {4, 4, 4, -1, 4, 4, 4};
    run("invalidated after buffers moved", 2, 0, inval, 7, "RRCIRRC", 0);
    run("invalidate without a graph", 2, 0, (const int[]){-1, 4, 4, 4}, 4, "RRRC", 0);
    /* A failed capture: plain steps from then on. */
    run("capture fails", 2, 0, epochs, 10, "RRCRRRRRRR", 1);
    run("graphs off", 2, 1, epochs, 10, "RRRRRRRRRR", 0);
    run("empty batch", 1, 0, (const int[]){0, 5, 5, 5}, 4, "RRCP", 0);
    return check_exit("test_graph_plan");
}
