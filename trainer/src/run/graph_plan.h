/* graph_plan: when a device step is captured as a CUDA graph, replayed, or run as plain launches.
 *
 * A graph is recorded for one batch size with every buffer address fixed, so the rules are:
 *  - steps of the graph's size: `warmup` plain steps first (the first steps allocate scratch memory and
 *    cuBLAS workspaces, which must not happen inside a capture), then one CAPTURE, then REPLAY for good;
 *  - a smaller step (the epoch's last, partial batch) runs plain and keeps the graph;
 *  - a larger step cannot be the tail: the size changed, so the graph is dropped (INVALIDATED once, for
 *    the caller to destroy it) and the new size starts over with its warm-up;
 *  - graph_plan_invalidate (buffers moved, e.g. a scratch buffer grew) drops the graph the same way;
 *  - a failed capture turns graphs off for the run (every later step plain), so a device or driver that
 *    cannot capture still trains.
 * Pure bookkeeping, no CUDA: tested on the CPU (tests/trainer/test_graph_plan.c). */
#ifndef TRAINER_GRAPH_PLAN_H
#define TRAINER_GRAPH_PLAN_H

enum graph_action {
    GRAPH_RUN,         /* plain launches */
    GRAPH_CAPTURE,     /* launch under stream capture, then instantiate; report with graph_plan_captured */
    GRAPH_REPLAY,      /* launch the instantiated graph */
    GRAPH_INVALIDATED, /* destroy the graph, then run this step plain */
};

struct graph_plan {
    int batch;      /* the size the graph is (or will be) for; 0 before the first step */
    int warmup;     /* plain steps before a capture */
    int seen;       /* plain steps of `batch` since the size was set */
    int have_graph; /* a graph for `batch` exists */
    int disabled;   /* a capture failed, or graphs were turned off */
};

/* warmup >= 1; disabled != 0 turns graphs off (every step GRAPH_RUN). */
void graph_plan_init(struct graph_plan *p, int warmup, int disabled);

/* What to do with a step of B images. */
enum graph_action graph_plan_step(struct graph_plan *p, int B);

/* After a GRAPH_CAPTURE step: ok != 0 when the graph was instantiated, 0 disables graphs. */
void graph_plan_captured(struct graph_plan *p, int ok);

/* The captured addresses are stale: the next step of the graph's size warms up and captures again.
 * Returns whether there was a graph to destroy. */
int graph_plan_invalidate(struct graph_plan *p);

#endif
