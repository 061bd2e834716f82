#include "io/csv_log.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/append_whole.h"

#define CSV_EOL "\r\n" /* csv.excel's lineterminator */

void csv_log_number(char *out, size_t len, double v)
{
    if (isnan(v) || isinf(v)) {
        snprintf(out, len, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
        return;
    }
    /* The fewest significant digits that read back as v, then repr's layout: positional for decimal
     * exponents -4 .. 15 with at least one digit after the point, scientific otherwise. */
    int digits = 1;
    char sci[40];
    for (; digits < 17; digits++) {
        snprintf(sci, sizeof sci, "%.*e", digits - 1, v);
        if (strtod(sci, NULL) == v)
            break;
    }
    snprintf(sci, sizeof sci, "%.*e", digits - 1, v);
    const int exp10 = atoi(strchr(sci, 'e') + 1);
    if (exp10 < -4 || exp10 >= 16) {
        snprintf(out, len, "%s", sci);
        return;
    }
    const int decimals = digits - 1 - exp10;
    snprintf(out, len, "%.*f%s", decimals > 0 ? decimals : 0, v, decimals > 0 ? "" : ".0");
}

/* The epoch of a complete row (its text up to the first ','), or -1 when it does not start with one. */
static long row_epoch(const char *line, size_t len)
{
    long e = 0;
    size_t i = 0;
    for (; i < len && line[i] >= '0' && line[i] <= '9' && e < 100000000; i++)
        e = e * 10 + (line[i] - '0');
    return i > 0 && i < len && line[i] == ',' ? e : -1;
}

/* The length of the prefix to keep: the header and the complete rows of epochs below epochs_done, up to
 * the first other line. -1 (said in err) when the first line is not our header. */
static long kept_prefix(const char *s, size_t n, int epochs_done, const char *path, char *err, size_t errlen)
{
    const size_t hlen = strlen(CSV_LOG_HEADER);
    size_t at = 0;
    if (n == 0)
        return 0;
    const char *nl = memchr(s, '\n', n);
    const size_t first = nl ? (size_t)(nl - s) : n;
    if (!(first >= hlen && strncmp(s, CSV_LOG_HEADER, hlen) == 0 &&
          (first == hlen || (first == hlen + 1 && s[hlen] == '\r')))) {
        snprintf(err, errlen, "%s: not a cifar-train CSV log (its first line is not '%s'): left as it is; pass "
                 "another --csv", path, CSV_LOG_HEADER);
        return -1;
    }
    if (!nl)
        return 0; /* a header cut short: write it again */
    at = first + 1;
    while (at < n) {
        const char *end = memchr(s + at, '\n', n - at);
        const long e = end ? row_epoch(s + at, (size_t)(end - (s + at))) : -1;
        if (e < 0 || e >= epochs_done)
            break;
        at = (size_t)(end - s) + 1;
    }
    return (long)at;
}

static int write_all_once(struct csv_log *c, const char *text, size_t len, char *err, size_t errlen)
{
    const int why = append_whole(c->fd, text, len);
    if (why) {
        snprintf(err, errlen, "%s: write: %s", c->path, strerror(why));
        return -1;
    }
    return 0;
}

int csv_log_open(struct csv_log *c, const char *path, int epochs_done, char *err, size_t errlen)
{
    c->fd = -1;
    if (snprintf(c->path, sizeof c->path, "%s", path) >= (int)sizeof c->path) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open for writing: %s", path, strerror(errno));
        return -1;
    }
    /* The whole file: one row per epoch, small. */
    size_t n = 0, cap = 0;
    char *s = NULL;
    for (;;) {
        if (n == cap) {
            char *t = realloc(s, cap = cap ? 2 * cap : 65536);
            if (!t) {
                snprintf(err, errlen, "%s: out of memory reading it", path);
                goto fail;
            }
            s = t;
        }
        const ssize_t r = read(fd, s + n, cap - n);
        if (r < 0) {
            snprintf(err, errlen, "%s: read: %s", path, strerror(errno));
            goto fail;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    const long keep = kept_prefix(s, n, epochs_done, path, err, errlen);
    if (keep < 0)
        goto fail;
    if ((size_t)keep < n && (ftruncate(fd, keep) != 0 || fsync(fd) != 0)) {
        snprintf(err, errlen, "%s: cutting it after epoch %d: %s", path, epochs_done, strerror(errno));
        goto fail;
    }
    free(s);
    s = NULL;
    c->fd = fd;
    if (lseek(fd, 0, SEEK_END) < 0) {
        snprintf(err, errlen, "%s: lseek: %s", path, strerror(errno));
        csv_log_close(c);
        return -1;
    }
    if (keep == 0 && write_all_once(c, CSV_LOG_HEADER CSV_EOL, strlen(CSV_LOG_HEADER CSV_EOL), err, errlen) != 0) {
        csv_log_close(c);
        return -1;
    }
    return 0;
fail:
    free(s);
    close(fd);
    return -1;
}

int csv_log_row(struct csv_log *c, int epoch, double acc, double loss, double val_acc, double val_loss,
                double images_per_sec, char *err, size_t errlen)
{
    const double v[5] = {acc, loss, val_acc, val_loss, images_per_sec};
    char row[256], num[40];
    int n = snprintf(row, sizeof row, "%d", epoch);
    for (int i = 0; i < 5; i++) {
        csv_log_number(num, sizeof num, v[i]);
        n += snprintf(row + n, sizeof row - (size_t)n, ",%s", num);
    }
    n += snprintf(row + n, sizeof row - (size_t)n, CSV_EOL);
    return write_all_once(c, row, (size_t)n, err, errlen);
}

void csv_log_close(struct csv_log *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}
