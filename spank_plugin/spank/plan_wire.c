/* The plan's wire format: writer and reader (plan_wire.h). */
#include "plan_wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

/* n bytes, NULs included. */
static void sb_append(struct sbuf *b, const char *data, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sb_putc(b, data[i]);
}

static void put_record(struct sbuf *b, char tag, const char *data, size_t n, bool *ok)
{
    if (n > BAI_WIRE_FIELD_MAX) {
        *ok = false;
        return;
    }
    unsigned char head[5] = {(unsigned char)tag, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                             (unsigned char)(n >> 8), (unsigned char)n};
    sb_append(b, (const char *)head, sizeof head);
    sb_append(b, data, n);
}

static void put_str(struct sbuf *b, char tag, const char *s, bool *ok)
{
    put_record(b, tag, s, strlen(s), ok);
}

/* Fields joined with NUL, each NUL-ended: the payload of M and E. */
static void put_fields(struct sbuf *b, char tag, const char *const *v, int n, bool *ok)
{
    struct sbuf f = {0};
    for (int i = 0; i < n; i++)
        sb_append(&f, v[i] ? v[i] : "", strlen(v[i] ? v[i] : "") + 1);
    size_t len = f.len;
    char *p = sb_finish(&f);
    if (!p)
        *ok = false;
    else
        put_record(b, tag, p, len, ok);
    if (p) {
        explicit_bzero(p, len);
        free(p);
    }
}

char *bai_wire_plan_write(const struct bai_wire_plan *w, size_t *len)
{
    struct sbuf b = {0};
    bool ok = true;
    char num[24];
    const struct bai_plan *p = &w->plan;
    if (p->n_mounts > BAI_WIRE_MAX_MOUNTS || p->n_env > BAI_WIRE_MAX_ENV || !p->job_dir || !p->log_dir)
        return NULL;
    sb_append(&b, BAI_WIRE_MAGIC, 8);
    snprintf(num, sizeof num, "%u", (unsigned)w->jobid);
    put_str(&b, 'J', num, &ok);
    snprintf(num, sizeof num, "%u", (unsigned)w->uid);
    put_str(&b, 'U', num, &ok);
    put_str(&b, 'D', w->digest, &ok);
    put_str(&b, 'd', p->job_dir, &ok);
    put_str(&b, 'l', p->log_dir, &ok);
    if (p->secrets_file)
        put_str(&b, 's', p->secrets_file, &ok);
    for (size_t i = 0; i < p->n_mounts; i++) {
        const struct bai_plan_mount *m = &p->mounts[i];
        const char *v[4] = {m->target, m->site_path, m->share, m->user_dir ? "u" : "-"};
        put_fields(&b, 'M', v, 4, &ok);
    }
    for (size_t i = 0; i < p->n_env; i++) {
        const struct bai_plan_env *e = &p->env[i];
        const char *v[3] = {e->name, e->value, e->secret ? "1" : "0"};
        put_fields(&b, 'E', v, 3, &ok);
    }
    put_record(&b, 'Z', "", 0, &ok);
    size_t n = b.len;
    char *out = sb_finish(&b);
    if (out && (!ok || n > BAI_WIRE_MAX_BYTES)) {
        explicit_bzero(out, n);
        free(out);
        out = NULL;
    }
    *len = n;
    return out;
}

/* --- The reader: every step bounded by the bytes left. --- */

static int bad(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, BAI_WIRE_WHY_MAX, fmt, ap);
    va_end(ap);
    return -1;
}

/* A NUL-free payload as a new string. */
static char *dup_value(const char *p, size_t n)
{
    if (memchr(p, '\0', n))
        return NULL;
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

/* Split a payload into exactly n NUL-ended fields (pointers into it). */
static int split(const char *p, size_t len, const char **v, int n)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        const char *end = at < len ? memchr(p + at, '\0', len - at) : NULL;
        if (!end)
            return -1;
        v[i] = p + at;
        at = (size_t)(end - p) + 1;
    }
    return at == len ? 0 : -1;
}

/* A decimal number below 2^32, no sign, no leading zero. */
static int parse_u32(const char *p, size_t n, uint32_t *out)
{
    unsigned long long v = 0;
    if (n == 0 || n > 10 || (n > 1 && p[0] == '0'))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    if (v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Exactly want lowercase hex digits in p[0..n). */
static bool lower_hex(const char *p, size_t n, size_t want)
{
    if (n != want)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

static char *opt_dup(const char *s)
{
    return s[0] ? strdup(s) : NULL;
}

int bai_wire_plan_read(const char *buf, size_t len, struct bai_wire_plan *w, char *why)
{
    struct bai_plan *p = &w->plan;
    memset(w, 0, sizeof *w);
    why[0] = '\0';
    if (len > BAI_WIRE_MAX_BYTES)
        return bad(why, "the plan has more than %u bytes", BAI_WIRE_MAX_BYTES);
    if (len < 8 || memcmp(buf, BAI_WIRE_MAGIC, 8) != 0)
        return bad(why, "the plan does not start with %s", BAI_WIRE_MAGIC);
    /* The one-of tags seen, by their place in this string. */
    static const char once[] = "JUDdls";
    bool seen[sizeof once] = {false};
    size_t at = 8;
    p->mounts = calloc(BAI_WIRE_MAX_MOUNTS, sizeof *p->mounts);
    p->env = calloc(BAI_WIRE_MAX_ENV, sizeof *p->env);
    if (!p->mounts || !p->env)
        return bad(why, "out of memory");
    for (;;) {
        if (len - at < 5)
            return bad(why, "the plan ends inside a record at byte %zu", at);
        const unsigned char *h = (const unsigned char *)buf + at;
        char tag = (char)h[0];
        size_t n = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | (size_t)h[4];
        at += 5;
        if (n > BAI_WIRE_FIELD_MAX || n > len - at)
            return bad(why, "record '%c' at byte %zu: length %zu is over the limit or past the end", tag, at - 5, n);
        const char *d = buf + at;
        at += n;
        if (tag == 'Z') {
            if (n != 0 || at != len)
                return bad(why, "bytes after the plan's end");
            break;
        }
        const char *o = tag ? strchr(once, tag) : NULL;
        if (o) {
            if (seen[o - once])
                return bad(why, "record '%c' appears twice", tag);
            seen[o - once] = true;
        }
        const char *v[4];
        switch (tag) {
        case 'J':
            if (parse_u32(d, n, &w->jobid) != 0)
                return bad(why, "the job id is not a number");
            break;
        case 'U': {
            uint32_t u;
            if (parse_u32(d, n, &u) != 0)
                return bad(why, "the uid is not a number");
            w->uid = (uid_t)u;
            break;
        }
        case 'D':
            if (!lower_hex(d, n, 64)) /* d is not NUL-ended: no str* function may read it */
                return bad(why, "the digest is not 64 lowercase hex digits");
            memcpy(w->digest, d, 64);
            w->digest[64] = '\0';
            break;
        case 'd':
        case 'l':
        case 's': {
            char *s = dup_value(d, n);
            if (!s)
                return bad(why, "record '%c' holds a NUL byte", tag);
            *(tag == 'd' ? &p->job_dir : tag == 'l' ? &p->log_dir : &p->secrets_file) = s;
            break;
        }
        case 'M': {
            if (p->n_mounts == BAI_WIRE_MAX_MOUNTS)
                return bad(why, "more than %d mounts", BAI_WIRE_MAX_MOUNTS);
            if (split(d, n, v, 4) != 0 || (strcmp(v[3], "u") != 0 && strcmp(v[3], "-") != 0) || !v[0][0])
                return bad(why, "mount %zu is malformed", p->n_mounts);
            struct bai_plan_mount *m = &p->mounts[p->n_mounts++];
            m->target = strdup(v[0]);
            m->site_path = opt_dup(v[1]);
            m->share = opt_dup(v[2]);
            m->user_dir = v[3][0] == 'u';
            if (!m->target || (v[1][0] && !m->site_path) || (v[2][0] && !m->share))
                return bad(why, "out of memory");
            break;
        }
        case 'E': {
            if (p->n_env == BAI_WIRE_MAX_ENV)
                return bad(why, "more than %d variables", BAI_WIRE_MAX_ENV);
            if (split(d, n, v, 3) != 0 || (strcmp(v[2], "0") != 0 && strcmp(v[2], "1") != 0) || !v[0][0])
                return bad(why, "variable %zu is malformed", p->n_env);
            struct bai_plan_env *e = &p->env[p->n_env++];
            e->name = strdup(v[0]);
            e->value = strdup(v[1]);
            e->secret = v[2][0] == '1';
            if (!e->name || !e->value)
                return bad(why, "out of memory");
            break;
        }
        default:
            return bad(why, "unknown record tag 0x%02x at byte %zu", (unsigned)(unsigned char)tag, at - n - 5);
        }
    }
    for (size_t i = 0; i < 5; i++) /* all but 's' */
        if (!seen[i])
            return bad(why, "record '%c' is missing", once[i]);
    return 0;
}
