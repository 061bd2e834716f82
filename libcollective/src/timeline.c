/* The timeline file (timeline.h): rank 0's Chrome trace-event JSON of every collective's phases per rank.
 *
 * Layout: one process row per rank (pid = rank), and in it one lane (tid) per collective in flight, so
 * that the collectives a step queues together lie one under the other and never overlap in a lane. Each
 * collective is an X event named by what the program asked for, spanning queued .. done, with its five
 * moments in its args, and inside it four X events, one per phase: negotiate (queued .. every rank has
 * announced it), wait (.. its group begins), reduce (.. reduced: copied in and through the backend),
 * finish (.. done: copied out, the apply function, the device's stream).
 *
 * Why the file is always valid JSON: events are appended at the closer's place together with a new
 * closer (`]}`) in the same write (append), so between writes the file on disk is a whole document,
 * whatever kills the process then. Recording only appends to memory; the text is formatted and written
 * by rank 0's progress thread every COLL_TL_FLUSH_SEC, and at the size cap a marker event is the last
 * thing written. */
#include "timeline.h"

#include "clock.h"
#include "errors.h"
#include "world.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

/* A process row shows at most this many lanes; beyond, collectives share the lane that frees first. */
#define MAX_LANES 64
/* A rank that is not rank 0 keeps at most this many records for the transport, then counts the rest lost
 * (the transport takes them every announcement, so only a rank whose rank 0 stopped reading fills it). */
#define OUTBOX_MAX 8192
/* Room kept below the cap for the marker event and the closer. */
#define MARKER_ROOM 2048
static const char closer[] = "\n]}\n";

/* A growable text buffer. */
struct text {
    char *p;
    size_t len, cap;
};

struct held {
    int rank;
    struct coll_tl_rec r;
};

static struct {
    pthread_mutex_t lock;
    int fd;             /* rank 0: the file, -1 when closed or failed */
    char path[4096];
    off_t end;          /* where the closer lies: the next events are written there */
    off_t cap;          /* COLL_TIMELINE_MAX_MB in bytes */
    int full;           /* the cap was reached: the marker is written, nothing more is */
    double t0;          /* rank 0's clock at coll_init: ts 0 */
    double *offset;     /* offset[r]: rank r's clock minus rank 0's (0 on one host) */
    int64_t (*lanes)[MAX_LANES]; /* lanes[r][l]: when lane l of rank r's row is free (ns) */
    int *nlanes;
    struct held *held;  /* rank 0: records not yet written */
    size_t nheld, capheld;
    struct text notes;  /* rank 0: marker events not yet written, each with its leading ",\n" */
    struct text buf;    /* rank 0: the text of one flush */
    double due;         /* when the buffered events must be flushed; 0: nothing buffered */
    struct coll_tl_rec *out; /* other ranks: records for the transport */
    size_t nout;
    int64_t lost;
} tl = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static int text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int text_add(struct text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if (t->p && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return 0;
        }
        size_t cap = t->cap ? t->cap * 2 : 65536;
        while (cap <= t->len + (size_t)n)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p)
            return -1;
        t->p = p;
        t->cap = cap;
    }
}

/* s as the inside of a JSON string. */
static void json_escape(char *out, size_t len, const char *s)
{
    size_t o = 0;
    for (; *s && o + 7 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            o += (size_t)snprintf(out + o, len - o, "\\%c", c);
        else if (c < 0x20)
            o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
        else
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

/* Microseconds with three decimals, exactly from whole nanoseconds, so that a phase's ts + dur is its
 * successor's ts to the digit and the phases nest in their collective in any reader. */
static const char *usec(char *buf, int64_t ns)
{
    char digits[24], *p = buf;
    uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
    int n = 0;
    do { /* by hand: a step's records need some 150 of these, and snprintf would be most of their cost */
        digits[n++] = (char)('0' + a % 10);
        a /= 10;
    } while (a || n < 4);
    if (ns < 0)
        *p++ = '-';
    while (n > 3)
        *p++ = digits[--n];
    *p++ = '.';
    while (n)
        *p++ = digits[--n];
    *p = '\0';
    return buf;
}

/* Writes all of buf at `at`; 0 or an errno. */
static int put(const char *buf, size_t len, off_t at)
{
    while (len) {
        ssize_t n = pwrite(tl.fd, buf, len, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : ENOSPC;
        buf += n;
        len -= (size_t)n;
        at += n;
    }
    return 0;
}

/* The file stops here: said once on stderr, the closer put back where it was so that the document stays
 * whole (a short write may have left half a batch behind it). */
static void give_up(int err)
{
    fprintf(stderr, "libcollective: timeline %s: cannot write: %s; the timeline stops here\n", tl.path,
            strerror(err));
    if (put(closer, sizeof closer - 1, tl.end) == 0 && ftruncate(tl.fd, tl.end + (off_t)sizeof closer - 1))
        fprintf(stderr, "libcollective: timeline %s: cannot cut it back to whole JSON: %s\n", tl.path,
                strerror(errno));
    close(tl.fd);
    tl.fd = -1;
}

/* Where the event that starts at t[from] ends (each begins with ",\n{"; a newline inside one is escaped). */
static size_t event_end(const char *t, size_t len, size_t from)
{
    for (size_t i = from + 2; i + 1 < len; i++)
        if (t[i] == '\n' && t[i - 1] == ',' && t[i + 1] == '{')
            return i - 1;
    return len;
}

/* Appends events t[0..len) at the closer's place, each write with a new closer after it. A write into the
 * page cache is cut short by a fatal signal (SIGTERM from mpirun, SIGKILL) only between pages, so each
 * write ends with its closer inside the page it starts in where one event fits, and only a write of a
 * single event across a page boundary can be cut: the file is a whole document after every write but
 * for that instant. */
static void append(const char *t, size_t len)
{
    const size_t c = sizeof closer - 1;
    const off_t page = 4096;
    for (size_t a = 0; a < len && tl.fd >= 0;) {
        const off_t room = (tl.end / page + 1) * page - tl.end;
        size_t b = event_end(t, len, a);
        for (size_t next; b < len && (off_t)((next = event_end(t, len, b)) - a + c) <= room;)
            b = next;
        struct iovec iov[2] = {{(void *)(t + a), b - a}, {(void *)closer, c}};
        ssize_t n;
        while ((n = pwritev(tl.fd, iov, 2, tl.end)) < 0 && errno == EINTR)
            ;
        if (n != (ssize_t)(b - a + c)) {
            give_up(n < 0 ? errno : ENOSPC);
            return;
        }
        tl.end += (off_t)(b - a);
        a = b;
    }
}

static void marker_locked(const char *what, double when)
{
    char esc[1024], ts[32];
    json_escape(esc, sizeof esc, what);
    if (text_add(&tl.notes,
                 ",\n{\"name\":\"%s\",\"cat\":\"libcollective\",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,"
                 "\"tid\":0,\"ts\":%s}",
                 esc, usec(ts, (int64_t)((when - tl.t0) * 1e9))))
        return;
    if (!tl.due)
        tl.due = coll_now() + COLL_TL_FLUSH_SEC;
}

static int lane_of(int rank, int64_t from, int64_t to)
{
    int64_t *end = tl.lanes[rank];
    int best = 0;
    for (int l = 0; l < tl.nlanes[rank]; l++) {
        if (end[l] <= from) {
            best = l;
            goto found;
        }
        if (end[l] < end[best])
            best = l;
    }
    if (tl.nlanes[rank] < MAX_LANES)
        best = tl.nlanes[rank]++;
found:
    end[best] = to;
    return best;
}

/* One collective on one rank: its X event and its four phases. */
static int format_rec(struct text *t, int rank, const struct coll_tl_rec *r)
{
    static const char *const phase[] = {"negotiate", "wait", "reduce", "finish"};
    int64_t ns[COLL_TL_PHASES];
    for (int i = 0; i < COLL_TL_PHASES; i++)
        ns[i] = (int64_t)((r->t[i] - tl.offset[rank] - tl.t0) * 1e9);
    const int lane = lane_of(rank, ns[0], ns[COLL_TL_DONE]);
    char what[200], a[COLL_TL_PHASES][32], b[32];
    coll_desc_format(&r->d, what, sizeof what);
    int rc = text_add(t,
                      ",\n{\"name\":\"%s\",\"cat\":\"collective\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%s,"
                      "\"dur\":%s,\"args\":{\"seq\":%" PRId64 ",\"group\":%" PRId64 ",\"queued\":%s,\"ready\":%s,"
                      "\"fused\":%s,\"reduced\":%s,\"done\":%s}}",
                      what, rank, lane, usec(a[0], ns[0]), usec(b, ns[COLL_TL_DONE] - ns[0]), r->seq, r->group,
                      a[0], usec(a[1], ns[1]), usec(a[2], ns[2]), usec(a[3], ns[3]), usec(a[4], ns[4]));
    for (int i = 0; !rc && i + 1 < COLL_TL_PHASES; i++)
        rc = text_add(t,
                      ",\n{\"name\":\"%s\",\"cat\":\"phase\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%s,\"dur\":%s,"
                      "\"args\":{\"seq\":%" PRId64 "}}",
                      phase[i], rank, lane, a[i], usec(b, ns[i + 1] - ns[i]), r->seq);
    return rc;
}

static void flush_locked(void)
{
    if (tl.fd < 0 || !tl.due)
        return;
    struct text t = tl.buf; /* kept between flushes */
    t.len = 0;
    const off_t limit = tl.cap - (off_t)MARKER_ROOM;
    size_t i = 0;
    for (; i < tl.nheld && !tl.full; i++) {
        size_t before = t.len;
        if (format_rec(&t, tl.held[i].rank, &tl.held[i].r))
            break;
        if (tl.end + (off_t)(t.len + tl.notes.len) > limit) {
            t.len = before;
            char what[160];
            snprintf(what, sizeof what,
                     "timeline size cap reached (COLL_TIMELINE_MAX_MB=%g): nothing more is recorded",
                     coll_world.env.timeline_max_mb);
            marker_locked(what, coll_now());
            tl.full = 1;
        }
    }
    tl.nheld = 0;
    if (tl.notes.len && text_add(&t, "%.*s", (int)tl.notes.len, tl.notes.p) == 0)
        tl.notes.len = 0;
    if (t.len)
        append(t.p, t.len);
    tl.buf = t;
    tl.due = 0;
}

static int open_file(const char *path, double cap_mb)
{
    snprintf(tl.path, sizeof tl.path, "%s", path);
    tl.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (tl.fd < 0)
        return coll_fail(COLL_ERR_ARG, "libcollective: COLL_TIMELINE=%s: cannot open the timeline file: %s", path,
                         strerror(errno));
    tl.cap = (off_t)(cap_mb * 1024 * 1024);
    char esc[sizeof tl.path * 6];
    json_escape(esc, sizeof esc, path);
    struct text t = {0};
    int rc = text_add(&t,
                      "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"writer\":\"libcollective\",\"file\":\"%s\","
                      "\"ranks\":%d,\"clock\":\"%s\"},\"traceEvents\":[\n"
                      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"rank 0\"}}",
                      esc, coll_world.size,
                      coll_world.local_size == coll_world.size
                          ? "CLOCK_MONOTONIC of this host, shared by every rank; ts 0 is rank 0's coll_init"
                          : "each rank's CLOCK_MONOTONIC, shifted by its offset to rank 0's measured as every "
                            "rank left one MPI_Barrier in coll_init; ts 0 is rank 0's coll_init");
    for (int r = 1; !rc && r < coll_world.size; r++)
        rc = text_add(&t, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}}", r,
                      r);
    if (!rc)
        rc = text_add(&t, "%s", closer);
    int err = rc ? ENOMEM : put(t.p, t.len, 0);
    if (!err)
        tl.end = (off_t)(t.len - (sizeof closer - 1));
    free(t.p);
    if (err) {
        close(tl.fd);
        tl.fd = -1;
        return coll_fail(COLL_ERR_ARG, "libcollective: COLL_TIMELINE=%s: cannot write the timeline file: %s", path,
                         strerror(err));
    }
    return COLL_OK;
}

/* Every rank leaves one barrier at nearly the same moment: its clock then, minus rank 0's, is its offset. */
static int measure_offsets(void)
{
    double now, *all = coll_world.rank == 0 ? tl.offset : NULL;
    int rc = MPI_Barrier(coll_world.ctrl);
    now = coll_now();
    if (rc == MPI_SUCCESS)
        rc = MPI_Gather(&now, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, coll_world.ctrl);
    if (rc != MPI_SUCCESS) {
        char err[COLL_ERRLEN];
        return coll_fail(coll_mpi_error(err, "MPI_Gather (timeline clocks)", rc), "%s", err);
    }
    for (int r = 0; all && r < coll_world.size; r++)
        all[r] = coll_world.local_size == coll_world.size ? 0 : all[r] - now;
    return COLL_OK;
}

static void release(void)
{
    if (tl.fd >= 0)
        close(tl.fd);
    free(tl.offset);
    free(tl.lanes);
    free(tl.nlanes);
    free(tl.held);
    free(tl.notes.p);
    free(tl.buf.p);
    free(tl.out);
    pthread_mutex_t lock = tl.lock;
    memset(&tl, 0, sizeof tl);
    tl.lock = lock;
    tl.fd = -1;
    coll_world.timeline = 0;
}

int coll_timeline_open(void)
{
    int rc = COLL_OK;
    /* Rank 0's verdict: 0 off, 1 on, -1 failed (every rank then fails coll_init with it). */
    int on = coll_world.rank == 0 && coll_world.env.timeline[0];
    if (on) {
        tl.t0 = coll_now();
        tl.offset = calloc((size_t)coll_world.size, sizeof *tl.offset);
        tl.lanes = calloc((size_t)coll_world.size, sizeof *tl.lanes);
        tl.nlanes = calloc((size_t)coll_world.size, sizeof *tl.nlanes);
        if (!rc && (!tl.offset || !tl.lanes || !tl.nlanes))
            rc = coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for the timeline of %d ranks", coll_world.size);
        if (!rc)
            rc = open_file(coll_world.env.timeline, coll_world.env.timeline_max_mb);
        on = rc ? -1 : 1;
    }
    if (coll_world.use_mpi && coll_world.size > 1) {
        int brc = MPI_Bcast(&on, 1, MPI_INT, 0, coll_world.ctrl);
        if (brc != MPI_SUCCESS) {
            char err[COLL_ERRLEN];
            rc = coll_fail(coll_mpi_error(err, "MPI_Bcast (timeline)", brc), "%s", err);
        } else if (on < 0 && coll_world.rank != 0) {
            rc = coll_fail(COLL_ERR_ARG, "libcollective: rank 0 cannot write its timeline file (COLL_TIMELINE), "
                                         "so no rank starts; rank 0 says why");
        } else if (on > 0) {
            rc = measure_offsets();
        }
    }
    if (rc) {
        if (tl.fd >= 0)
            unlink(tl.path);
        release();
        return rc;
    }
    coll_world.timeline = on > 0;
    return COLL_OK;
}

void coll_timeline_close(void)
{
    if (!coll_world.timeline)
        return;
    pthread_mutex_lock(&tl.lock);
    if (coll_world.rank == 0) {
        if (tl.nheld || tl.notes.len)
            tl.due = coll_now();
        flush_locked();
    }
    release();
    pthread_mutex_unlock(&tl.lock);
}

static int hold_locked(int rank, const struct coll_tl_rec *r)
{
    if (tl.nheld == tl.capheld) {
        size_t cap = tl.capheld ? tl.capheld * 2 : 1024;
        struct held *h = realloc(tl.held, cap * sizeof *h);
        if (!h)
            return -1;
        tl.held = h;
        tl.capheld = cap;
    }
    tl.held[tl.nheld++] = (struct held){rank, *r};
    if (!tl.due)
        tl.due = coll_now() + COLL_TL_FLUSH_SEC;
    else if (tl.nheld >= COLL_TL_FLUSH_RECORDS)
        tl.due = 1; /* at once (coll_now is never this small) */
    return 0;
}

void coll_timeline_local(const struct coll_tl_rec *r)
{
    pthread_mutex_lock(&tl.lock);
    if (coll_world.rank == 0) {
        if (!tl.full && tl.fd >= 0)
            hold_locked(0, r);
        /* No MPI: no progress thread runs the collectives, so the caller's thread keeps the cadence. */
        if (!coll_world.use_mpi && tl.due && coll_now() >= tl.due)
            flush_locked();
    } else if (tl.nout == OUTBOX_MAX || (!tl.out && !(tl.out = malloc(OUTBOX_MAX * sizeof *tl.out)))) {
        tl.lost++;
    } else {
        tl.out[tl.nout++] = *r;
    }
    pthread_mutex_unlock(&tl.lock);
}

size_t coll_timeline_outbox(struct coll_tl_rec *out, size_t max, int64_t *lost)
{
    pthread_mutex_lock(&tl.lock);
    size_t n = tl.nout < max ? tl.nout : max;
    if (n) {
        memcpy(out, tl.out, n * sizeof *out);
        memmove(tl.out, tl.out + n, (tl.nout - n) * sizeof *out);
        tl.nout -= n;
    }
    *lost = tl.lost;
    tl.lost = 0;
    pthread_mutex_unlock(&tl.lock);
    return n;
}

void coll_timeline_remote(int rank, const struct coll_tl_rec *r, size_t n, int64_t lost)
{
    if (rank <= 0 || rank >= coll_world.size)
        return;
    pthread_mutex_lock(&tl.lock);
    for (size_t i = 0; i < n && !tl.full && tl.fd >= 0; i++)
        hold_locked(rank, &r[i]);
    if (lost > 0 && !tl.full) {
        char what[160];
        snprintf(what, sizeof what, "rank %d: %lld collectives not recorded (its records were not taken in time)",
                 rank, (long long)lost);
        marker_locked(what, coll_now());
    }
    pthread_mutex_unlock(&tl.lock);
}

double coll_timeline_tick(int force)
{
    pthread_mutex_lock(&tl.lock);
    if (tl.due && (force || coll_now() >= tl.due))
        flush_locked();
    double due = tl.due;
    pthread_mutex_unlock(&tl.lock);
    return due;
}

void coll_timeline_abort(const char *why)
{
    if (!coll_world.timeline || coll_world.rank != 0)
        return;
    /* The progress thread may be inside a flush (a write of at most one cadence's events): wait for it a
     * little, never for ever, since the job is ending anyway. */
    for (int i = 0; i < 200; i++) {
        if (pthread_mutex_trylock(&tl.lock) == 0) {
            if (!tl.full)
                marker_locked(why, coll_now());
            flush_locked();
            pthread_mutex_unlock(&tl.lock);
            return;
        }
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
}
