/* The control block of ranks that share a host: announcements, grants and wake-ups in shared memory.
 *
 * Why: between processes of one host the MPI control plane (progress.c's READY/GO messages) can only be
 * polled: Open MPI has no blocking wait that a thread can sleep in, so a rank owed a message napped and
 * woke many times a training step, on the cores the compute threads need, and a grant reached a napping
 * peer late (the figures: docs/benchmarks.md, "libcollective: the figures behind its design"). Here each rank publishes what it announces in its own part of a node-shared block, every
 * rank reads every rank's part and runs the coordinator (coordinator.c) itself, on the same inputs, so all
 * reach the same grants and the same refusals without a message; a rank waits by sleeping on a futex, its
 * bell, which whoever makes it runnable rings. No rank polls, and no grant takes a hop through rank 0.
 *
 * Each rank's part (struct part): its bell and whether its progress thread sleeps on it; `announced`
 * (every seq below it is described in log[seq % LOG_SLOTS]); `granted` (this rank has read every rank's
 * descriptors below it, so log slots below it are free for reuse).
 *
 * One grouping everywhere: a rank grants what it sees, so two ranks may grant a range in different pieces.
 * Node-shared reductions do not mind (shm.c), but a fused MPI or NCCL collective must be the same on
 * every rank. Each entry says whether it ended an announcement of its rank, and a fused group never runs
 * past a seq where any rank's announcement ended (coll_coord_cut). Every grant ends at such a seq (the
 * rank that announced least ended one there), so the groups no longer depend on who saw what when.
 *
 * Wake-ups without lost ones: a sleeper reads its bell, sets `sleeping`, then looks once more at what it
 * waits for and sleeps only if that is still not there, and only while the bell keeps the value it read
 * (FUTEX_WAIT). A waker first publishes, then rings every sleeping rank. All of these are sequentially
 * consistent atomics, so of a sleeper's look and a waker's test of `sleeping` at least one sees the other's
 * store (Dekker): the sleeper sees the news, or the waker rings. A waker rings only when its store may
 * complete what others wait for: an announcement that raises the lowest `announced` of all ranks (the one
 * that completes a collective), a reduction mark that raises the lowest mark of all ranks (shm.c).
 *
 * With the timeline on (timeline.h) each part is followed by a ring of its rank's timeline records,
 * written by that rank and read by rank 0 (one writer, one reader: `head` and `tail` are all they share).
 * A full ring drops records and counts them, so the timeline never holds a rank back. */
#include "hostctl.h"

#include "clock.h"
#include "errors.h"
#include "shm.h"
#include "timeline.h"
#include "world.h"

#include <linux/futex.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Descriptors a rank may announce beyond the oldest one some rank has not granted: far more than a
 * training step queues (13), and a program that queues more before waiting is only held back (announce
 * publishes what fits), never refused. */
#define LOG_SLOTS 1024

struct part {
    _Atomic uint32_t bell;
    _Atomic uint32_t sleeping;
    char pad0[64 - 2 * sizeof(uint32_t)]; /* own cache lines: rung by every peer */
    _Atomic int64_t announced;
    char pad1[64 - sizeof(int64_t)];
    _Atomic int64_t granted;
    char pad2[64 - sizeof(int64_t)];
    struct entry {
        struct coll_desc d;
        int64_t ends; /* 1: the last of one announcement */
    } log[LOG_SLOTS];
};

/* Records a rank may complete between two looks of rank 0 (every grant, so a step's dozen is typical). */
#define RING_SLOTS 512

struct ring {
    _Atomic int64_t head; /* records below it were written (by the owner) */
    char pad0[64 - sizeof(int64_t)];
    _Atomic int64_t tail; /* records below it were read (by rank 0) */
    _Atomic int64_t lost; /* dropped by the owner, ring full */
    char pad1[64 - 2 * sizeof(int64_t)];
    struct coll_tl_rec rec[RING_SLOTS];
};

static struct {
    struct coll_shm_region *block;
    struct ring **rings; /* rings[r]: rank r's timeline ring, as mapped here; NULL without the timeline */
    struct part **parts; /* parts[r]: rank r's, as mapped here */
    int64_t *seen;       /* seen[r]: rank r's descriptors below it went to this rank's coordinator */
} host;

static struct part *mine(void) { return host.parts[coll_world.rank]; }

int coll_hostctl_open(void)
{
    if (coll_world.size < 2)
        return COLL_OK;
    /* Every rank knows the same coll_world.timeline (rank 0's), so all map parts of one size. */
    const size_t part = (sizeof(struct part) + 63) / 64 * 64;
    int rc = coll_shm_block(part + (coll_world.timeline ? sizeof(struct ring) : 0), &host.block);
    if (rc != COLL_OK || !host.block)
        return rc;
    host.parts = calloc((size_t)coll_world.size, sizeof *host.parts);
    host.seen = calloc((size_t)coll_world.size, sizeof *host.seen);
    host.rings = coll_world.timeline ? calloc((size_t)coll_world.size, sizeof *host.rings) : NULL;
    if (!host.parts || !host.seen || (coll_world.timeline && !host.rings)) {
        coll_hostctl_close();
        return coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for the node-shared control block");
    }
    for (int r = 0; r < coll_world.size; r++) {
        host.parts[r] = coll_shm_rank_data(host.block, r);
        if (host.rings)
            host.rings[r] = (struct ring *)((char *)host.parts[r] + part);
    }
    coll_world.host_shared = 1;
    return COLL_OK;
}

void coll_hostctl_close(void)
{
    coll_shm_block_free(host.block);
    free(host.parts);
    free(host.seen);
    free(host.rings);
    memset(&host, 0, sizeof host);
    coll_world.host_shared = 0;
}

static void ring(struct part *p)
{
    atomic_fetch_add(&p->bell, 1);
    if (atomic_load(&p->sleeping))
        syscall(SYS_futex, &p->bell, FUTEX_WAKE, 1, NULL, NULL, 0);
}

void coll_hostctl_ring_self(void)
{
    ring(mine());
}

void coll_hostctl_ring_peers(void)
{
    for (int r = 0; r < coll_world.size; r++)
        if (r != coll_world.rank)
            ring(host.parts[r]);
}

void coll_hostctl_sleep(pthread_mutex_t *held, double until, int (*ready)(void *), void *arg)
{
    struct part *me = mine();
    const uint32_t bell = atomic_load(&me->bell);
    atomic_store(&me->sleeping, 1);
    if (held)
        pthread_mutex_unlock(held);
    if (!ready || !ready(arg)) {
        const double left = until > 0 ? until - coll_now() : 0;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        if (until <= 0) /* until rung */
            syscall(SYS_futex, &me->bell, FUTEX_WAIT, bell, NULL, NULL, 0);
        else if (left > 0)
            syscall(SYS_futex, &me->bell, FUTEX_WAIT, bell, &ts, NULL, 0);
    }
    atomic_store(&me->sleeping, 0);
    if (held)
        pthread_mutex_lock(held);
}

size_t coll_hostctl_announce(struct coll_request *const *w, size_t n)
{
    struct part *me = mine();
    const int64_t first = atomic_load(&me->announced);
    int64_t oldest = INT64_MAX; /* the lowest seq some rank has not granted */
    for (int r = 0; r < coll_world.size; r++) {
        int64_t g = atomic_load(&host.parts[r]->granted);
        oldest = g < oldest ? g : oldest;
    }
    int64_t room = oldest + LOG_SLOTS - first;
    size_t k = room <= 0 ? 0 : (size_t)room < n ? (size_t)room : n;
    for (size_t i = 0; i < k; i++)
        me->log[w[i]->seq % LOG_SLOTS] = (struct entry){w[i]->d, i + 1 == k};
    if (!k)
        return 0;
    atomic_store(&me->announced, first + (int64_t)k);
    /* Ring when this raised the lowest announcement of all: every other rank was already past where
     * this one stood, so something may now be complete. */
    int last = 1;
    for (int r = 0; last && r < coll_world.size; r++)
        last = r == coll_world.rank || atomic_load(&host.parts[r]->announced) > first;
    if (last)
        coll_hostctl_ring_peers();
    return k;
}

int coll_hostctl_arrive(struct coll_coord *c)
{
    int news = 0;
    for (int r = 0; r < coll_world.size; r++) {
        const struct part *p = host.parts[r];
        const int64_t upto = atomic_load(&p->announced);
        for (; host.seen[r] < upto; host.seen[r]++) {
            const struct entry *e = &p->log[host.seen[r] % LOG_SLOTS];
            if (coll_coord_arrive(c, r, host.seen[r], 1, &e->d) != COLL_OK)
                return -1;
            if (e->ends)
                coll_coord_cut(c, host.seen[r]);
            news = 1;
        }
    }
    return news;
}

int coll_hostctl_news(void *unused)
{
    (void)unused;
    for (int r = 0; r < coll_world.size; r++)
        if (atomic_load(&host.parts[r]->announced) > host.seen[r])
            return 1;
    return 0;
}

void coll_hostctl_granted(int64_t upto)
{
    atomic_store(&mine()->granted, upto);
}

void coll_hostctl_times_put(void)
{
    struct ring *g = host.rings ? host.rings[coll_world.rank] : NULL;
    if (!g)
        return;
    const int64_t head = atomic_load(&g->head), room = RING_SLOTS - (head - atomic_load(&g->tail));
    struct coll_tl_rec rec[64];
    int64_t lost = 0, put = 0;
    size_t n = coll_timeline_outbox(rec, sizeof rec / sizeof rec[0], &lost);
    for (size_t i = 0; i < n; i++) {
        if (put == room)
            lost++;
        else
            g->rec[(head + put++) % RING_SLOTS] = rec[i];
    }
    if (lost)
        atomic_fetch_add(&g->lost, lost);
    atomic_store(&g->head, head + put);
}

void coll_hostctl_times_take(void)
{
    for (int r = 1; host.rings && r < coll_world.size; r++) {
        struct ring *g = host.rings[r];
        const int64_t head = atomic_load(&g->head);
        int64_t tail = atomic_load(&g->tail);
        const int64_t lost = atomic_exchange(&g->lost, 0);
        for (; tail < head; tail++)
            coll_timeline_remote(r, &g->rec[tail % RING_SLOTS], 1, 0);
        if (lost)
            coll_timeline_remote(r, NULL, 0, lost);
        atomic_store(&g->tail, tail);
    }
}
