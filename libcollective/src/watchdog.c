/* The watchdog: a thread of its own, so that a stuck job ends whatever the progress thread is doing. The
 * progress thread can be blocked inside MPI_Allreduce (or a NCCL stream) for as long as a peer is
 * stopped or dead, and could then neither warn nor abort; this thread never calls MPI except MPI_Abort.
 *
 * Once per tick it looks at two clocks, under coll_ctl.lock:
 *  - this rank's oldest collective that has not completed, since the program queued it; it is either
 *    waiting for its grant, or running in the backend (running_since set by fusion.c);
 *  - on rank 0 (on every rank when the ranks share a host), the oldest collective that some rank has not
 *    announced (published by the coordinator), since the first rank announced it: this names the late
 *    ranks, and fires even while this rank's own program computes.
 * After COLL_STALL_WARNING_SEC it prints one warning per collective; after COLL_STALL_ABORT_SEC it prints
 * the same facts and aborts the job (coll_abort_job). Every rank runs the same rule on its own clock, so
 * the job ends within the abort time plus one tick of whichever rank notices first, whether rank 0 is the
 * stopped one or not. */
#include "controller.h"

#include "clock.h"
#include "desc.h"
#include "device.h"
#include "errors.h"
#include "timeline.h"
#include "world.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void coll_abort_job(const char *fmt, ...)
{
    char line[2 * COLL_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
    coll_timeline_abort(line); /* the reason ends rank 0's timeline, which is whole JSON up to it */
    /* ncclCommAbort is the one NCCL call meant to be made while another thread is blocked in NCCL. */
    if (coll_device_plugin())
        coll_device_plugin()->abort();
    if (coll_world.use_mpi)
        MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

/* What the stalled collective waits for, in words, and since when; returns 0 when nothing waits. */
struct stall {
    int64_t seq;
    struct coll_desc d;
    double since;
    char why[512];
};

static int oldest_stall_locked(struct stall *st)
{
    const struct coll_request *r = coll_ctl.live_head;
    while (r && r->done)
        r = r->live_next;
    const int late = coll_ctl.late.seq >= 0 && (!r || coll_ctl.late.seq <= r->seq);
    if (late) { /* rank 0: who has not announced it is known */
        const int many = strncmp(coll_ctl.late.ranks, "ranks", 5) == 0;
        st->seq = coll_ctl.late.seq;
        st->d = coll_ctl.late.desc;
        st->since = coll_ctl.late.since;
        snprintf(st->why, sizeof st->why, "for %s, which %s not reached it", coll_ctl.late.ranks,
                 many ? "have" : "has");
        return 1;
    }
    if (!r)
        return 0;
    st->seq = r->seq;
    st->d = r->d;
    st->since = r->queued_at;
    const char *inside = r->d.device ? "NCCL" : r->d.shm_region ? "the node-shared reduction" : "MPI";
    if (r->running_since > 0 && coll_world.size == 2)
        snprintf(st->why, sizeof st->why, "inside %s for rank %d, which stopped or died during it (rank %d)",
                 inside, 1 - coll_world.rank, coll_world.rank);
    else if (r->running_since > 0)
        snprintf(st->why, sizeof st->why,
                 "inside %s: every rank reached it, and one of the other %d stopped or died during it (rank %d)",
                 inside, coll_world.size - 1, coll_world.rank);
    else if (coll_world.rank != 0 && !coll_world.host_shared) /* on one host every rank grants for itself */
        snprintf(st->why, sizeof st->why,
                 "for rank 0 to grant it (rank %d): rank 0 is stopped or dead, or it waits for another rank and "
                 "says which",
                 coll_world.rank);
    else
        snprintf(st->why, sizeof st->why, "on rank %d, which has not yet run it", coll_world.rank);
    return 1;
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    const struct coll_env *e = &coll_world.env;
    double shortest = e->stall_warn_sec;
    if (e->stall_abort_sec > 0 && (shortest <= 0 || e->stall_abort_sec < shortest))
        shortest = e->stall_abort_sec;
    double tick = shortest / 10;
    tick = tick < 0.05 ? 0.05 : tick > 1.0 ? 1.0 : tick;
    int64_t warned = -1;
    pthread_mutex_lock(&coll_ctl.lock);
    while (!coll_ctl.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + tick;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&coll_ctl.watchdog_cv, &coll_ctl.lock, &ts);
        struct stall st;
        if (coll_ctl.stop || !oldest_stall_locked(&st))
            continue;
        const double waited = coll_now() - st.since;
        const int abort_now = e->stall_abort_sec > 0 && waited >= e->stall_abort_sec;
        if (!abort_now && (e->stall_warn_sec <= 0 || waited < e->stall_warn_sec || warned >= st.seq))
            continue;
        char what[200];
        coll_desc_format(&st.d, what, sizeof what);
        if (abort_now) /* the lock stays held: nothing else needs to move now */
            coll_abort_job("libcollective: stall: collective #%lld (%s) has waited %.1f s %s; aborting the job "
                           "(COLL_STALL_ABORT_SEC=%g)",
                           (long long)st.seq, what, waited, st.why, e->stall_abort_sec);
        fprintf(stderr, "libcollective: stall: collective #%lld (%s) has waited %.1f s %s\n", (long long)st.seq,
                what, waited, st.why);
        fflush(stderr);
        warned = st.seq;
    }
    pthread_mutex_unlock(&coll_ctl.lock);
    return NULL;
}

int coll_watchdog_start(void)
{
    if (coll_world.env.stall_warn_sec <= 0 && coll_world.env.stall_abort_sec <= 0)
        return COLL_OK;
    int rc = coll_thread_start(&coll_ctl.watchdog, watchdog_main, NULL);
    if (rc)
        return coll_fail(COLL_ERR_STATE, "libcollective: cannot start the watchdog thread: %s", strerror(rc));
    coll_ctl.watchdog_running = 1;
    return COLL_OK;
}

void coll_watchdog_stop(void)
{
    if (!coll_ctl.watchdog_running)
        return;
    pthread_mutex_lock(&coll_ctl.lock);
    pthread_cond_signal(&coll_ctl.watchdog_cv);
    pthread_mutex_unlock(&coll_ctl.lock);
    pthread_join(coll_ctl.watchdog, NULL);
    coll_ctl.watchdog_running = 0;
}
