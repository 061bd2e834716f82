/* The coordinator (Horovod's controller, reduced to sequence numbers): which collective each rank has
 * announced, whether they agree (checked mode, check.c), and which ranks the oldest one still waits for
 * (which the controller publishes for the watchdog, watchdog.c). Run by rank 0's progress thread under MPI, and by every rank's
 * when the ranks share a host (hostctl.c). */
#include "coord.h"

#include "clock.h"
#include "errors.h"

#include <stdlib.h>
#include <string.h>

struct slot {
    struct coll_desc d; /* as the first rank to announce it described it */
    int have, first_rank;
    double first_time;
    char *mismatch; /* what disagrees, or NULL */
    int cut;        /* some rank's announcement ended here (coll_coord_cut) */
};

struct coll_coord {
    int size;
    int check; /* compare every rank's descriptors (COLL_CHECK), not just count them */
    int64_t *ready; /* ready[r]: rank r announced every seq below it */
    int64_t base;   /* seq of slots[0]; everything below is granted */
    struct slot *slots;
    size_t nslots, cap;
};

struct coll_coord *coll_coord_new(int size, int check)
{
    struct coll_coord *c = calloc(1, sizeof *c);
    if (!c || !(c->ready = calloc((size_t)size, sizeof *c->ready))) {
        free(c);
        return NULL;
    }
    c->size = size;
    c->check = check;
    return c;
}

void coll_coord_free(struct coll_coord *c)
{
    if (!c)
        return;
    coll_coord_release(c, c->base + (int64_t)c->nslots);
    free(c->slots);
    free(c->ready);
    free(c);
}

static struct slot *slot_of(struct coll_coord *c, int64_t seq)
{
    size_t i = (size_t)(seq - c->base);
    if (i >= c->cap) {
        size_t cap = c->cap ? c->cap : 64;
        while (cap <= i)
            cap *= 2;
        struct slot *s = realloc(c->slots, cap * sizeof *s);
        if (!s)
            return NULL;
        c->slots = s;
        c->cap = cap;
    }
    if (i >= c->nslots) {
        memset(c->slots + c->nslots, 0, (i + 1 - c->nslots) * sizeof *c->slots);
        c->nslots = i + 1;
    }
    return &c->slots[i];
}

int coll_coord_arrive(struct coll_coord *c, int rank, int64_t first, int64_t n, const struct coll_desc *d)
{
    if (rank < 0 || rank >= c->size || first != c->ready[rank] || n < 0)
        return COLL_ERR_BACKEND; /* announcements from one rank arrive in order and without gaps */
    double now = coll_now();
    for (int64_t i = 0; i < n; i++) {
        struct slot *s = slot_of(c, first + i);
        if (!s)
            return COLL_ERR_NOMEM;
        if (!s->have) {
            s->d = d[i];
            s->have = 1;
            s->first_rank = rank;
            s->first_time = now;
        } else if (c->check && !s->mismatch) {
            char msg[COLL_ERRLEN];
            if (coll_check_differs(&s->d, s->first_rank, &d[i], rank, first + i, msg, sizeof msg))
                s->mismatch = strdup(msg);
        }
    }
    c->ready[rank] = first + n;
    return COLL_OK;
}

int64_t coll_coord_grantable(const struct coll_coord *c)
{
    int64_t m = c->ready[0];
    for (int r = 1; r < c->size; r++)
        if (c->ready[r] < m)
            m = c->ready[r];
    return m;
}

void coll_coord_cut(struct coll_coord *c, int64_t seq)
{
    size_t i = (size_t)(seq - c->base);
    if (i < c->nslots) /* arrive made the slot */
        c->slots[i].cut = 1;
}

int coll_coord_is_cut(const struct coll_coord *c, int64_t seq)
{
    size_t i = (size_t)(seq - c->base);
    return i < c->nslots && c->slots[i].cut;
}

const char *coll_coord_mismatch(const struct coll_coord *c, int64_t seq)
{
    size_t i = (size_t)(seq - c->base);
    return i < c->nslots ? c->slots[i].mismatch : NULL;
}

void coll_coord_release(struct coll_coord *c, int64_t upto)
{
    size_t n = (size_t)(upto - c->base);
    if (n > c->nslots)
        n = c->nslots;
    for (size_t i = 0; i < n; i++)
        free(c->slots[i].mismatch);
    memmove(c->slots, c->slots + n, (c->nslots - n) * sizeof *c->slots);
    c->nslots -= n;
    c->base = upto;
}

void coll_coord_late(const struct coll_coord *c, struct coll_late *out)
{
    int late = c->nslots && c->slots[0].have && coll_coord_grantable(c) <= c->base;
    out->seq = late ? c->base : -1;
    if (late) {
        out->desc = c->slots[0].d;
        out->since = c->slots[0].first_time;
        coll_stall_ranks(c->base, c->ready, c->size, out->ranks, sizeof out->ranks);
    }
}
