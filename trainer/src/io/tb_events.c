#include "io/tb_events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "io/append_whole.h"
#include "io/crc32c.h"
#include "make_dirs.h"

/* Protobuf wire types. */
enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

/* A message being encoded: a fixed buffer (an event holds a few scalars), `over` once it would overflow. */
struct pb {
    unsigned char b[2048];
    size_t n;
    int over;
};

static void pb_raw(struct pb *p, const void *v, size_t len)
{
    if (p->over || len > sizeof p->b - p->n) {
        p->over = 1;
        return;
    }
    memcpy(p->b + p->n, v, len);
    p->n += len;
}

static void pb_varint(struct pb *p, uint64_t v)
{
    unsigned char b[10];
    size_t n = 0;
    do {
        b[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_raw(p, b, n);
}

static void pb_key(struct pb *p, unsigned field, unsigned wire) { pb_varint(p, (uint64_t)field << 3 | wire); }

/* Little-endian fixed-width values (protobuf's and TFRecord's byte order). */
static void le_bytes(unsigned char *out, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

static void pb_double(struct pb *p, unsigned field, double v)
{
    uint64_t u;
    unsigned char b[8];
    memcpy(&u, &v, sizeof u);
    le_bytes(b, u, 8);
    pb_key(p, field, WT_FIXED64);
    pb_raw(p, b, 8);
}

static void pb_float(struct pb *p, unsigned field, float v)
{
    uint32_t u;
    unsigned char b[4];
    memcpy(&u, &v, sizeof u);
    le_bytes(b, u, 4);
    pb_key(p, field, WT_FIXED32);
    pb_raw(p, b, 4);
}

static void pb_bytes(struct pb *p, unsigned field, const void *v, size_t len)
{
    pb_key(p, field, WT_LEN);
    pb_varint(p, len);
    pb_raw(p, v, len);
}

static void pb_message(struct pb *p, unsigned field, const struct pb *m)
{
    p->over |= m->over;
    pb_bytes(p, field, m->b, m->n);
}

static double now_seconds(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

/* An Event's head: wall_time = 1, step = 2 (omitted at 0, protobuf's default). */
static void event_head(struct pb *e, int64_t step)
{
    memset(e, 0, sizeof *e);
    pb_double(e, 1, now_seconds());
    if (step) {
        pb_key(e, 2, WT_VARINT);
        pb_varint(e, (uint64_t)step);
    }
}

/* One TFRecord around the event's bytes, in a single write. */
static int write_record(struct tb_events *t, const struct pb *e, char *err, size_t errlen)
{
    unsigned char rec[sizeof e->b + 16];
    if (e->over) {
        snprintf(err, errlen, "%s: event too large to encode", t->path);
        return -1;
    }
    le_bytes(rec, e->n, 8);
    le_bytes(rec + 8, crc32c_masked(rec, 8), 4);
    memcpy(rec + 12, e->b, e->n);
    le_bytes(rec + 12 + e->n, crc32c_masked(e->b, e->n), 4);
    const size_t len = e->n + 16;
    const int why = append_whole(t->fd, rec, len);
    if (why)
        snprintf(err, errlen, "%s: write: %s", t->path, strerror(why));
    return why ? -1 : 0;
}

int tb_events_open(struct tb_events *t, const char *dir, int64_t resume_step, char *err, size_t errlen)
{
    char host[256] = "localhost";
    t->fd = -1;
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    if (bai_make_dirs(dir, 0777) != 0) {
        snprintf(err, errlen, "%s: cannot create directory: %s", dir, strerror(errno));
        return -1;
    }
    const long long secs = (long long)now_seconds();
    for (int attempt = 0; attempt < 2 && t->fd < 0; attempt++) {
        int n = attempt ? snprintf(t->path, sizeof t->path, "%s/events.out.tfevents.%010lld.%s.%ld", dir, secs, host,
                                   (long)getpid())
                        : snprintf(t->path, sizeof t->path, "%s/events.out.tfevents.%010lld.%s", dir, secs, host);
        if (n >= (int)sizeof t->path) {
            snprintf(err, errlen, "%s: path too long", dir);
            return -1;
        }
        t->fd = open(t->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (t->fd < 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: cannot create: %s", t->path, strerror(errno));
            return -1;
        }
    }
    if (t->fd < 0) {
        snprintf(err, errlen, "%s: exists already", t->path);
        return -1;
    }
    struct pb e;
    static const char version[] = "brain.Event:2";
    event_head(&e, 0);
    pb_bytes(&e, 3, version, strlen(version));
    int rc = write_record(t, &e, err, errlen);
    if (rc == 0 && resume_step >= 0) {
        struct pb log = {0};
        pb_key(&log, 1, WT_VARINT);
        pb_varint(&log, 1); /* SessionLog.START */
        event_head(&e, resume_step);
        pb_message(&e, 6, &log);
        rc = write_record(t, &e, err, errlen);
    }
    if (rc != 0)
        tb_events_close(t);
    return rc;
}

int tb_events_scalars(struct tb_events *t, int64_t step, const char *const *tags, const float *values, int n,
                      char *err, size_t errlen)
{
    struct pb e, summary = {0};
    for (int i = 0; i < n; i++) {
        struct pb value = {0};
        pb_bytes(&value, 1, tags[i], strlen(tags[i]));
        pb_float(&value, 2, values[i]);
        pb_message(&summary, 1, &value);
    }
    event_head(&e, step);
    pb_message(&e, 5, &summary);
    return write_record(t, &e, err, errlen);
}

void tb_events_close(struct tb_events *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
}
