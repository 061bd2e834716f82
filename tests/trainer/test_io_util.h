/* Small helpers shared by the trainer I/O tests: temp directories, file copies and the path of this directory
 * (for the h5py scripts beside the tests). Their assertions are tests/check.h's. */
#ifndef TEST_IO_UTIL_H
#define TEST_IO_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"

/* mkdtemp under $TMPDIR (or /tmp); the caller removes it (and frees the name) with rm_rf(). */
static inline char *make_temp_dir(const char *tag)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char *p = malloc(strlen(base) + strlen(tag) + 16);
    sprintf(p, "%s/%s.XXXXXX", base, tag);
    if (!mkdtemp(p)) {
        perror(p);
        exit(2);
    }
    return p;
}

static inline void rm_rf(char *dir)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
    free(dir);
}

/* Copy the first `len` bytes of src to dst (len = (size_t)-1: all of it). */
static inline void copy_prefix(const char *src, const char *dst, size_t len)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    if (!in || !out) {
        fprintf(stderr, "copy %s -> %s: %s\n", src, dst, strerror(errno));
        exit(2);
    }
    char buf[65536];
    size_t n;
    while (len > 0 && (n = fread(buf, 1, len < sizeof buf ? len : sizeof buf, in)) > 0) {
        fwrite(buf, 1, n, out);
        len -= n;
    }
    fclose(in);
    fclose(out);
}

/* Overwrite one byte of a file. */
static inline void poke(const char *path, long at, unsigned char value)
{
    FILE *f = fopen(path, "r+b");
    if (!f || fseek(f, at, SEEK_SET) != 0 || fputc(value, f) == EOF) {
        fprintf(stderr, "poke %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fclose(f);
}

/* The directory holding this test's sources (tests run from the repository root, as `make check` does). */
#define TEST_SRC_DIR "tests/trainer"

#endif
