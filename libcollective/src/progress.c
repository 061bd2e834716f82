/* The progress thread, as Horovod's background thread: it takes queued requests, announces them to rank 0
 * (every COLL_CYCLE_TIME_MS, or at once when someone waits), learns from rank 0 which sequence numbers
 * every rank has reached (GO) or which disagree (ERR), and runs the granted requests in order, fused.
 *
 * Why a thread rather than MPI_Iallreduce progressed from coll_wait(): Open MPI 4.1 has no asynchronous
 * progress (ompi_info: "OMPI progress: no"), so a nonblocking collective only moves while someone calls
 * into MPI; reductions would not overlap with backward unless the trainer polled. Because only this
 * thread calls MPI after coll_init(), MPI_THREAD_SERIALIZED is enough and Open MPI's per-call locking
 * for MPI_THREAD_MULTIPLE is avoided.
 *
 * Messages on coll_world.ctrl (int64 words): READY rank->0 {first seq, n, n descriptors};
 * GO 0->rank {upto}: every seq below upto may run; ERR 0->rank {seq, text}: that seq fails everywhere.
 * MPI keeps messages between two ranks on one communicator in order, so an ERR arrives before its GO.
 * With the timeline on, a READY ends with {m, lost, m timeline records} (timeline.h): the phases of this
 * rank's collectives completed since its last announcement ride to rank 0 with no message of their own.
 *
 * When every rank shares this host (coll_world.host_shared) there are no messages: announcements go into the
 * node-shared control block (hostctl.c), every rank's thread runs the coordinator on all of them and
 * grants for itself, and the thread sleeps on its bell there instead of napping. */
#include "controller.h"

#include "clock.h"
#include "coord.h"
#include "errors.h"
#include "fusion.h"
#include "hostctl.h"
#include "timeline.h"
#include "world.h"

#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_READY = 1, TAG_GO = 2, TAG_ERR = 3 };

struct send_slot {
    MPI_Request req;
    void *buf;
};

struct progress {
    struct coll_request **work; /* taken, not completed, in sequence order (consecutive seqs) */
    size_t nwork, cap;
    size_t announced; /* work[0..announced) were announced */
    int64_t granted;  /* seqs below it may run */
    double deadline;  /* when unannounced work must be announced; 0 when there is none */
    double nap;       /* the last nap while a message is owed (coll_nap), 0 after progress */
    double nap_since; /* when that series of naps began */
    double flush_due; /* rank 0 with the timeline on: when buffered events must reach the file; 0: none */
    struct coll_coord *coord; /* rank 0 only */
    struct send_slot *sends;
    size_t nsends, scap;
    int64_t *rbuf;
    size_t rcap;
};

/* The control plane failing means ranks can no longer agree on anything: stop the job loudly rather than
 * let the others hang. */
static void die(const char *what, int rc)
{
    char err[COLL_ERRLEN];
    coll_mpi_error(err, what, rc);
    fprintf(stderr, "%s (rank %d, progress thread); aborting\n", err, coll_world.rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
    abort();
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(p, n * elem);
    if (!q) {
        fprintf(stderr, "libcollective: out of memory in the progress thread (%zu bytes); aborting\n", n * elem);
        abort();
    }
    *cap = n;
    return q;
}

/* Sends words (malloc'd, owned from now on) without blocking; the buffer is freed once MPI is done. */
static void send_words(struct progress *p, int dest, int tag, int64_t *buf, size_t words)
{
    p->sends = grow(p->sends, &p->scap, p->nsends + 1, sizeof *p->sends);
    struct send_slot *s = &p->sends[p->nsends++];
    s->buf = buf;
    int rc = MPI_Isend(buf, (int)words, MPI_INT64_T, dest, tag, coll_world.ctrl, &s->req);
    if (rc != MPI_SUCCESS)
        die("MPI_Isend (coordinator message)", rc);
}

static void reap_sends(struct progress *p, int all)
{
    size_t keep = 0;
    for (size_t i = 0; i < p->nsends; i++) {
        int done = 0, rc;
        rc = all ? MPI_Wait(&p->sends[i].req, MPI_STATUS_IGNORE)
                 : MPI_Test(&p->sends[i].req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            die(all ? "MPI_Wait (coordinator message)" : "MPI_Test (coordinator message)", rc);
        if (all || done)
            free(p->sends[i].buf);
        else
            p->sends[keep++] = p->sends[i];
    }
    p->nsends = keep;
}

static int64_t *words(size_t n)
{
    int64_t *w = malloc(n * sizeof *w);
    if (!w) {
        fprintf(stderr, "libcollective: out of memory in the progress thread; aborting\n");
        abort();
    }
    return w;
}

/* With the lock held: moves queued requests into p->work. Returns whether a waiter asked to flush. */
static int take_locked(struct progress *p)
{
    for (struct coll_request *r = coll_ctl.pending_head; r; r = r->pending_next) {
        p->work = grow(p->work, &p->cap, p->nwork + 1, sizeof *p->work);
        p->work[p->nwork++] = r;
    }
    coll_ctl.pending_head = coll_ctl.pending_tail = NULL;
    int flush = coll_ctl.flush;
    coll_ctl.flush = 0;
    return flush;
}

/* The most timeline records one announcement carries (a training step completes about a dozen). */
#define TIMES_MAX 256

/* A full control-block log (hostctl.c) is tried again this much later. */
#define LOG_FULL_RETRY 1e-3

static void announce(struct progress *p)
{
    size_t n = p->nwork - p->announced;
    if (coll_world.host_shared) {
        if (coll_world.timeline && coll_world.rank != 0) /* what completed before this reaches rank 0 before it */
            coll_hostctl_times_put();
        size_t k = coll_hostctl_announce(p->work + p->announced, n);
        p->announced += k;
        p->deadline = k < n ? coll_now() + LOG_FULL_RETRY : 0;
        return;
    }
    const int times = coll_world.timeline && coll_world.rank != 0;
    const size_t len = 2 + n * COLL_DESC_WORDS + (times ? 2 + TIMES_MAX * COLL_TL_WORDS : 0);
    int64_t *msg = words(len);
    msg[0] = p->work[p->announced]->seq;
    msg[1] = (int64_t)n;
    struct coll_desc *d = (struct coll_desc *)(msg + 2);
    for (size_t i = 0; i < n; i++)
        d[i] = p->work[p->announced + i]->d;
    p->announced = p->nwork;
    p->deadline = 0;
    if (coll_world.rank != 0) {
        int64_t *tail = msg + 2 + n * COLL_DESC_WORDS;
        if (times)
            tail[0] = (int64_t)coll_timeline_outbox((struct coll_tl_rec *)(tail + 2), TIMES_MAX, &tail[1]);
        send_words(p, 0, TAG_READY, msg,
                   2 + n * COLL_DESC_WORDS + (times ? 2 + (size_t)tail[0] * COLL_TL_WORDS : 0));
        return;
    }
    if (p->coord && coll_coord_arrive(p->coord, 0, msg[0], msg[1], d))
        die("coordinator bookkeeping", MPI_ERR_INTERN);
    free(msg);
}

static struct coll_request *work_at(struct progress *p, int64_t seq)
{
    int64_t i = p->nwork ? seq - p->work[0]->seq : -1;
    if (i < 0 || (size_t)i >= p->announced) {
        fprintf(stderr, "libcollective: rank %d was told about collective #%lld it never announced; aborting\n",
                coll_world.rank, (long long)seq);
        MPI_Abort(MPI_COMM_WORLD, 1);
        abort();
    }
    return p->work[i];
}

static void refuse(struct coll_request *r, const char *text)
{
    r->status = COLL_ERR_MISMATCH;
    snprintf(r->error, sizeof r->error, "%s", text);
}

/* Receives one pending message matching (source, tag) into p->rbuf; returns its length in words or -1. */
static long receive(struct progress *p, int source, int tag, MPI_Status *st)
{
    int flag = 0, n = 0, rc;
    if ((rc = MPI_Iprobe(source, tag, coll_world.ctrl, &flag, st)) != MPI_SUCCESS)
        die("MPI_Iprobe (coordinator message)", rc);
    if (!flag)
        return -1;
    MPI_Get_count(st, MPI_INT64_T, &n);
    p->rbuf = grow(p->rbuf, &p->rcap, (size_t)n + 1, sizeof *p->rbuf);
    if ((rc = MPI_Recv(p->rbuf, n, MPI_INT64_T, st->MPI_SOURCE, st->MPI_TAG, coll_world.ctrl, MPI_STATUS_IGNORE)) !=
        MPI_SUCCESS)
        die("MPI_Recv (coordinator message)", rc);
    return n;
}

/* Grants what every rank has announced, on rank 0 under MPI and on every rank of one host (each reaches
 * the same decisions from the same announcements, and marks where fused groups must end so that all
 * group alike): refuses the collectives that disagree, or aborts the job (COLL_MISMATCH_ABORT=1); under
 * MPI tells the other ranks. */
static int grant(struct progress *p)
{
    int64_t upto = coll_coord_grantable(p->coord);
    if (upto <= p->granted)
        return 0;
    for (int64_t seq = p->granted; seq < upto; seq++) {
        const char *text = coll_coord_mismatch(p->coord, seq);
        if (!text)
            continue;
        if (coll_world.env.mismatch_abort) /* the ranks' programs have diverged: nothing after can agree */
            coll_abort_job("%s; aborting the job (COLL_MISMATCH_ABORT=1)", text);
        size_t len = strlen(text) + 1, nw = 1 + (len + 7) / 8;
        for (int r = 1; !coll_world.host_shared && r < coll_world.size; r++) {
            int64_t *msg = words(nw);
            msg[nw - 1] = 0;
            msg[0] = seq;
            memcpy(msg + 1, text, len);
            send_words(p, r, TAG_ERR, msg, nw);
        }
        refuse(work_at(p, seq), text);
    }
    for (int64_t seq = p->granted; coll_world.host_shared && seq < upto; seq++)
        work_at(p, seq)->cut_after = coll_coord_is_cut(p->coord, seq);
    for (int r = 1; !coll_world.host_shared && r < coll_world.size; r++) {
        int64_t *msg = words(1);
        msg[0] = upto;
        send_words(p, r, TAG_GO, msg, 1);
    }
    if (coll_world.host_shared)
        coll_hostctl_granted(upto);
    coll_coord_release(p->coord, upto);
    p->granted = upto;
    return 1;
}

/* Rank 0 under MPI: collects announcements and grants. */
static int coordinate(struct progress *p)
{
    int busy = 0;
    MPI_Status st;
    long n;
    while ((n = receive(p, MPI_ANY_SOURCE, TAG_READY, &st)) >= 0) {
        const long descs = n >= 2 && p->rbuf[1] >= 0 ? 2 + (long)p->rbuf[1] * (long)COLL_DESC_WORDS : -1;
        const int64_t *tail = p->rbuf + descs;
        const int times = descs >= 0 && n > descs; /* the timeline's records follow (timeline.h) */
        if (descs < 0 || n < descs ||
            (times && (n < descs + 2 || tail[0] < 0 || n != descs + 2 + tail[0] * (long)COLL_TL_WORDS)) ||
            coll_coord_arrive(p->coord, st.MPI_SOURCE, p->rbuf[0], p->rbuf[1], (struct coll_desc *)(p->rbuf + 2)))
            die("coordinator bookkeeping (malformed announcement)", MPI_ERR_INTERN);
        if (times)
            coll_timeline_remote(st.MPI_SOURCE, (const struct coll_tl_rec *)(tail + 2), (size_t)tail[0], tail[1]);
        busy = 1;
    }
    return grant(p) | busy;
}

/* Every rank of one host: reads the announcements from the control block and grants. */
static int coordinate_host(struct progress *p)
{
    int busy = coll_hostctl_arrive(p->coord);
    if (busy < 0)
        die("coordinator bookkeeping (control block)", MPI_ERR_INTERN);
    return grant(p) | busy;
}

/* Other ranks: GO and ERR from rank 0. */
static int follow(struct progress *p)
{
    int busy = 0;
    MPI_Status st;
    long n;
    while ((n = receive(p, 0, MPI_ANY_TAG, &st)) >= 0) {
        if (st.MPI_TAG == TAG_GO && n == 1) {
            p->granted = p->rbuf[0];
        } else if (st.MPI_TAG == TAG_ERR && n >= 2) {
            ((char *)(p->rbuf + 1))[(size_t)(n - 1) * 8 - 1] = '\0';
            refuse(work_at(p, p->rbuf[0]), (const char *)(p->rbuf + 1));
        } else {
            die("coordinator protocol (unexpected message from rank 0)", MPI_ERR_INTERN);
        }
        busy = 1;
    }
    return busy;
}

struct coll_ctl coll_ctl = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .work_cv = PTHREAD_COND_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
    .watchdog_cv = PTHREAD_COND_INITIALIZER,
    .late = {.seq = -1},
};

/* The fusion executor's hooks (fusion.h): this thread alone completes requests. */
static void started(struct coll_request *w0, double t)
{
    pthread_mutex_lock(&coll_ctl.lock); /* from here the watchdog blames the backend, not the grant */
    w0->running_since = t;
    pthread_mutex_unlock(&coll_ctl.lock);
}

/* Marks r done (under the lock) and wakes its waiters. */
static void finished(struct coll_request *r, int status, const char *error)
{
    pthread_mutex_lock(&coll_ctl.lock);
    r->status = status;
    if (status != COLL_OK)
        snprintf(r->error, sizeof r->error, "%s", error);
    r->done = 1;
    pthread_cond_broadcast(&coll_ctl.done_cv);
    pthread_mutex_unlock(&coll_ctl.lock);
}

static const struct coll_shm_bell bell = {coll_hostctl_ring_peers, coll_hostctl_sleep};
static const struct coll_fusion_hooks hooks = {started, finished, &bell};

void coll_progress_run_inline(struct coll_request *r)
{
    coll_fusion_run(&hooks, &r, 1);
}

/* Publishes the coordinator's oldest late collective for the watchdog. */
static void publish_late(const struct coll_coord *c)
{
    struct coll_late late;
    coll_coord_late(c, &late);
    pthread_mutex_lock(&coll_ctl.lock);
    coll_ctl.late.seq = late.seq;
    if (late.seq >= 0)
        coll_ctl.late = late;
    pthread_mutex_unlock(&coll_ctl.lock);
}

/* Runs every granted request; they are a prefix of p->work. */
static int execute(struct progress *p)
{
    size_t n = 0;
    while (n < p->announced && p->work[n]->seq < p->granted)
        n++;
    if (!n)
        return 0;
    if (coll_world.timeline) {
        const double now = coll_now();
        for (size_t i = 0; i < n; i++)
            if (!p->work[i]->granted_at)
                p->work[i]->granted_at = now;
    }
    coll_fusion_run(&hooks, p->work, n); /* completed requests may be freed by their waiters from here on */
    memmove(p->work, p->work + n, (p->nwork - n) * sizeof *p->work);
    p->nwork -= n;
    p->announced -= n;
    return 1;
}

/* A grant that has not come for 50 ms waits for a peer far behind (a checkpoint, a stopped rank): naps of
 * 1 ms then add at most 2% to that wait, and cost a fraction of the core that shorter naps would
 * (docs/benchmarks.md, "Figures behind code comments"). */
#define LONG_WAIT 50e-3
#define NAP_LONG 1e-3

static void wait_until_locked(double when)
{
    double left = when - coll_now();
    if (left <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's default clock */
    double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + left;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&coll_ctl.work_cv, &coll_ctl.lock, &ts);
}

/* The timeline's traffic (timeline.h): on one host the other ranks' records cross in the control block,
 * under MPI inside READY (announce, coordinate); rank 0 flushes on the cadence. Returns when rank 0's next
 * flush is due. */
static double timeline(int force)
{
    if (coll_world.rank != 0) {
        if (coll_world.host_shared)
            coll_hostctl_times_put();
        return 0;
    }
    if (coll_world.host_shared)
        coll_hostctl_times_take();
    return coll_timeline_tick(force);
}

static double earliest(double a, double b) { return !a ? b : !b ? a : a < b ? a : b; }

/* Nothing happened this round. Sleeping on the condition variable until woken is only safe when no
 * message can be owed to us: otherwise nap on it (a new request or a waiter still wakes us at once) and
 * poll MPI again, never spinning. */
static void idle_locked(struct progress *p)
{
    if (coll_ctl.pending_head || coll_ctl.flush || coll_ctl.stop)
        return;
    if (coll_world.host_shared) { /* rung by a new request, a waiter, or a peer's announcement that completes one */
        coll_hostctl_sleep(&coll_ctl.lock, earliest(p->nwork > p->announced ? p->deadline : 0, p->flush_due),
                           coll_hostctl_news, NULL);
        return;
    }
    int awaiting = p->announced > 0;
    int coordinating = p->coord != NULL;
    if (p->nwork > p->announced && !awaiting) {
        wait_until_locked(earliest(p->deadline, p->flush_due));
        return;
    }
    if (awaiting) {
        const double now = coll_now();
        if (p->nap <= 0)
            p->nap_since = now;
        double until = now + coll_nap_next(&p->nap);
        if (now - p->nap_since > LONG_WAIT)
            until = now + NAP_LONG;
        if (p->nwork > p->announced && p->deadline < until)
            until = p->deadline;
        wait_until_locked(earliest(until, p->flush_due));
        return;
    }
    if (coordinating) /* others may announce (and stall) while this rank's program computes */
        wait_until_locked(earliest(coll_now() + 0.05, p->flush_due));
    else if (p->flush_due)
        wait_until_locked(p->flush_due);
    else
        pthread_cond_wait(&coll_ctl.work_cv, &coll_ctl.lock);
}

static void *progress_main(void *arg)
{
    struct progress *p = arg;
    prctl(PR_SET_TIMERSLACK, 1000UL); /* naps of 10 us are 10 us, not 60 (see NAP_MIN) */
    pthread_mutex_lock(&coll_ctl.lock);
    for (;;) {
        size_t before = p->nwork;
        int flush = take_locked(p);
        int stop = coll_ctl.stop;
        pthread_mutex_unlock(&coll_ctl.lock);

        double now = p->nwork > p->announced ? coll_now() : 0;
        if (p->nwork > before && !p->deadline)
            p->deadline = now + coll_world.env.cycle_sec;
        int busy = 0;
        if (p->nwork > p->announced && (flush || stop || now >= p->deadline)) {
            announce(p);
            busy = 1;
        }
        if (coll_world.host_shared) {
            busy |= coordinate_host(p);
            if (busy)
                publish_late(p->coord);
        } else if (coll_world.use_mpi) {
            busy |= coll_world.rank == 0 ? coordinate(p) : follow(p);
            if (busy && p->coord) /* something was announced or granted */
                publish_late(p->coord);
            reap_sends(p, 0);
        } else if (p->announced) { /* a single process without MPI agrees with itself */
            p->granted = p->work[p->announced - 1]->seq + 1;
        }
        busy |= execute(p);
        if (busy)
            p->nap = 0;
        if (coll_world.timeline)
            p->flush_due = timeline(0);

        pthread_mutex_lock(&coll_ctl.lock);
        coll_ctl.cycle_pending = p->nwork > p->announced;
        if (stop && !p->nwork && !coll_ctl.pending_head)
            break;
        if (!busy)
            idle_locked(p);
    }
    pthread_mutex_unlock(&coll_ctl.lock);
    if (coll_world.timeline) /* every rank's records of what ran before coll_finalize's barrier */
        timeline(1);
    if (coll_world.use_mpi)
        reap_sends(p, 1);
    return NULL;
}

static struct progress state;

int coll_progress_start(void)
{
    memset(&state, 0, sizeof state);
    if (coll_world.use_mpi && (coll_world.rank == 0 || coll_world.host_shared) && !(state.coord = coll_coord_new(coll_world.size, coll_world.env.check)))
        return coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for the coordinator of %d ranks", coll_world.size);
    coll_ctl.stop = 0;
    coll_ctl.cycle_pending = 0;
    coll_ctl.late.seq = -1;
    int rc = coll_thread_start(&coll_ctl.thread, progress_main, &state);
    if (rc) {
        coll_coord_free(state.coord);
        return coll_fail(COLL_ERR_STATE, "libcollective: cannot start the progress thread: %s", strerror(rc));
    }
    if (coll_world.size > 1 && (rc = coll_watchdog_start()) != COLL_OK) {
        char err[COLL_ERRLEN];
        snprintf(err, sizeof err, "%s", coll_last_error());
        coll_progress_stop();
        coll_set_error(err);
    }
    return rc;
}

void coll_progress_wake_locked(void)
{
    if (coll_world.host_shared)
        coll_hostctl_ring_self();
    else
        pthread_cond_signal(&coll_ctl.work_cv);
}

void coll_progress_stop(void)
{
    pthread_mutex_lock(&coll_ctl.lock);
    coll_ctl.stop = 1;
    coll_progress_wake_locked();
    pthread_mutex_unlock(&coll_ctl.lock);
    pthread_join(coll_ctl.thread, NULL);
    coll_watchdog_stop();
    coll_coord_free(state.coord);
    free(state.work);
    free(state.sends);
    free(state.rbuf);
    memset(&state, 0, sizeof state);
}
