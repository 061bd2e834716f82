/* cifar_data: CIFAR-10 binary loader and --download. Contract in cifar_data.h. */
#include "io/cifar_data.h"
#include "io/errbuf.h"

#include "io/md5.h"
#include "sha256.h" /* the project's one SHA-256 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The six files every set has, training first. */
static const char *const set_files[CIFAR_TRAIN_FILES + 1] = {"data_batch_1.bin", "data_batch_2.bin",
                                                            "data_batch_3.bin", "data_batch_4.bin",
                                                            "data_batch_5.bin", "test_batch.bin"};

/* Records in `path`, after checking the size is a whole number of records (0 records is an error too:
 * an empty batch file is a damaged set). Returns -1 with the message set on failure. */
static long count_records(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        set_err(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    if (st.st_size == 0 || st.st_size % CIFAR_RECORD_BYTES != 0) {
        set_err(err, errlen, "%s: size %lld is not a positive multiple of the %d-byte record (1 label + 3072 pixels)",
                path, (long long)st.st_size, CIFAR_RECORD_BYTES);
        return -1;
    }
    return (long)(st.st_size / CIFAR_RECORD_BYTES);
}

/* Read the first `n` records of `path` into the set at image/label position `at`, converting the three
 * colour planes to interleaved HWC. */
static int read_records(const char *path, size_t n, struct cifar_set *s, size_t at, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    uint8_t rec[CIFAR_RECORD_BYTES];
    const size_t plane = CIFAR_H * CIFAR_W;
    for (size_t i = 0; i < n; i++) {
        if (fread(rec, 1, sizeof rec, f) != sizeof rec) {
            set_err(err, errlen, "%s: record %zu: %s", path, i,
                    ferror(f) ? strerror(errno) : "unexpected end of file (file changed while reading?)");
            fclose(f);
            return -1;
        }
        if (rec[0] >= CIFAR_CLASSES) {
            set_err(err, errlen, "%s: record %zu has label %u (expected 0..9)", path, i, rec[0]);
            fclose(f);
            return -1;
        }
        s->labels[at + i] = rec[0];
        uint8_t *dst = s->images + (at + i) * CIFAR_IMAGE_BYTES;
        const uint8_t *r = rec + 1, *g = r + plane, *b = g + plane;
        for (size_t p = 0; p < plane; p++) {
            dst[3 * p] = r[p];
            dst[3 * p + 1] = g[p];
            dst[3 * p + 2] = b[p];
        }
    }
    fclose(f);
    return 0;
}

/* Load `nfiles` files of `dir` in order, keeping the first `limit` images (0 = all). Every file is sized
 * first so a damaged set fails before any large allocation. */
static int load_files(const char *dir, const char *const *names, int nfiles, size_t limit, struct cifar_set *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char paths[CIFAR_TRAIN_FILES][4096];
    size_t counts[CIFAR_TRAIN_FILES];
    size_t total = 0;
    for (int i = 0; i < nfiles; i++) {
        if ((size_t)snprintf(paths[i], sizeof paths[i], "%s/%s", dir, names[i]) >= sizeof paths[i]) {
            set_err(err, errlen, "%s: path too long", dir);
            return -1;
        }
        long n = count_records(paths[i], err, errlen);
        if (n < 0)
            return -1;
        counts[i] = (size_t)n;
        total += (size_t)n;
    }
    if (limit > 0 && limit < total)
        total = limit;
    struct cifar_set s = {.n = total, .images = malloc(total * CIFAR_IMAGE_BYTES), .labels = malloc(total)};
    if (!s.images || !s.labels) {
        set_err(err, errlen, "%s: out of memory for %zu images", dir, total);
        cifar_free(&s);
        return -1;
    }
    size_t at = 0;
    for (int i = 0; i < nfiles && at < total; i++) {
        size_t take = counts[i] < total - at ? counts[i] : total - at;
        if (read_records(paths[i], take, &s, at, err, errlen) != 0) {
            cifar_free(&s);
            return -1;
        }
        at += take;
    }
    *out = s;
    return 0;
}

int cifar_load_train(const char *dir, size_t limit, struct cifar_set *out, char *err, size_t errlen)
{
    return load_files(dir, set_files, CIFAR_TRAIN_FILES, limit, out, err, errlen);
}

int cifar_load_test(const char *dir, size_t limit, struct cifar_set *out, char *err, size_t errlen)
{
    return load_files(dir, set_files + CIFAR_TRAIN_FILES, 1, limit, out, err, errlen);
}

void cifar_free(struct cifar_set *s)
{
    free(s->images);
    free(s->labels);
    memset(s, 0, sizeof *s);
}

/* Feed the bytes of the file at `path` to update(ctx, ...): the one reading loop of the digests below. */
static int digest_file(const char *path, void (*update)(void *ctx, const void *p, size_t n), void *ctx, char *err,
                       size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    uint8_t buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        update(ctx, buf, got);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        set_err(err, errlen, "%s: read error", path);
        return -1;
    }
    return 0;
}

static void sha256_feed(void *ctx, const void *p, size_t n)
{
    bai_sha256_update(ctx, p, n);
}

int cifar_sha256_file(const char *path, char hex[65], char *err, size_t errlen)
{
    struct bai_sha256 c;
    bai_sha256_init(&c);
    if (digest_file(path, sha256_feed, &c, err, errlen) != 0)
        return -1;
    bai_sha256_final_hex(&c, hex);
    return 0;
}

static int check_sums(const char *dir, FILE *sums, const char *sums_path, char *err, size_t errlen)
{
    char line[4352];
    int lineno = 0;
    while (fgets(line, sizeof line, sums)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0])
            continue;
        size_t hexlen = strspn(line, "0123456789abcdefABCDEF");
        const char *name = line + hexlen;
        if (hexlen == 64 && (strncmp(name, "  ", 2) == 0 || strncmp(name, " *", 2) == 0))
            name += 2;
        else
            name = NULL;
        if (!name || !*name || strchr(name, '/') || strcmp(name, "..") == 0 || strcmp(name, ".") == 0) {
            set_err(err, errlen, "%s: line %d is not '<sha256>  <file name>'", sums_path, lineno);
            return -1;
        }
        char path[4096], got[65];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
            set_err(err, errlen, "%s: path too long", dir);
            return -1;
        }
        if (cifar_sha256_file(path, got, err, errlen) != 0)
            return -1;
        if (strncasecmp(got, line, 64) != 0) {
            set_err(err, errlen, "%s: SHA-256 %s; SHA256SUMS says %.64s (damaged or truncated file)", path, got,
                    line);
            return -1;
        }
    }
    return 0;
}

int cifar_verify(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/SHA256SUMS", dir) >= sizeof path) {
        set_err(err, errlen, "%s: path too long", dir);
        return -1;
    }
    FILE *sums = fopen(path, "r");
    if (sums) {
        int rc = check_sums(dir, sums, path, err, errlen);
        fclose(sums);
        if (rc != 0)
            return -1;
    } else if (errno != ENOENT) {
        set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    long first = 0;
    for (int i = 0; i < CIFAR_TRAIN_FILES + 1; i++) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, set_files[i]) >= sizeof path) {
            set_err(err, errlen, "%s: path too long", dir);
            return -1;
        }
        long n = count_records(path, err, errlen);
        if (n < 0)
            return -1;
        if (i == 0)
            first = n;
        else if (n != first) {
            set_err(err, errlen, "%s: %ld records, %s has %ld (truncated file?)", path, n, set_files[0], first);
            return -1;
        }
    }
    return 0;
}

static void md5_feed(void *ctx, const void *p, size_t n)
{
    md5_update(ctx, p, n);
}

int cifar_md5_file(const char *path, char hex[33], char *err, size_t errlen)
{
    struct md5_ctx c;
    md5_init(&c);
    if (digest_file(path, md5_feed, &c, err, errlen) != 0)
        return -1;
    uint8_t d[16];
    md5_final(&c, d);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return 0;
}

/* Run argv (no shell: paths are passed as they are), stdout/stderr inherited. Returns the exit status, or -1
 * when it could not run at all (127 from the child means exec failed). */
static int run(char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int have_program(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char buf[4096];
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        if (len > 0 && (size_t)snprintf(buf, sizeof buf, "%.*s/%s", (int)len, p, name) < sizeof buf &&
            access(buf, X_OK) == 0)
            return 1;
        p += len;
        if (*p == ':')
            p++;
    }
    return 0;
}

/* The data set is "present" when both loaders accept it. Checking sizes and labels costs one read of
 * 180 MB at most, and it only happens on --download. */
static int set_present(const char *data_dir)
{
    struct cifar_set s;
    if (cifar_load_test(data_dir, 0, &s, NULL, 0) != 0)
        return 0;
    cifar_free(&s);
    if (cifar_load_train(data_dir, 1, &s, NULL, 0) != 0)
        return 0;
    cifar_free(&s);
    return 1;
}

#define DOWNLOAD_HINT "download %s by hand, unpack it and pass --data DIR/" CIFAR_ARCHIVE_DIR

int cifar_download_from(const char *parent, const char *url, const char *md5_hex, char *data_dir,
                        size_t data_dir_len, char *err, size_t errlen)
{
    if ((size_t)snprintf(data_dir, data_dir_len, "%s/%s", parent, CIFAR_ARCHIVE_DIR) >= data_dir_len) {
        set_err(err, errlen, "%s: path too long", parent);
        return -1;
    }
    if (set_present(data_dir))
        return 0;
    if (mkdir(parent, 0755) != 0 && errno != EEXIST) {
        set_err(err, errlen, "%s: cannot create directory: %s", parent, strerror(errno));
        return -1;
    }
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.cifar-10-binary.tar.gz.XXXXXX", parent) >= sizeof tmp) {
        set_err(err, errlen, "%s: path too long", parent);
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot create temporary file: %s", parent, strerror(errno));
        return -1;
    }
    close(fd);

    int rc = -1;
    int status;
    if (have_program("curl")) {
        char *argv[] = {"curl", "-fL", "--retry", "2", "-sS", "-o", tmp, (char *)url, NULL};
        status = run(argv);
    } else if (have_program("wget")) {
        char *argv[] = {"wget", "-q", "-O", tmp, (char *)url, NULL};
        status = run(argv);
    } else {
        set_err(err, errlen, "cannot download CIFAR-10: neither curl nor wget is installed; " DOWNLOAD_HINT, url);
        goto out;
    }
    if (status != 0) {
        set_err(err, errlen, "cannot download CIFAR-10 from %s (exit status %d); " DOWNLOAD_HINT, url, status, url);
        goto out;
    }
    char got[33];
    if (cifar_md5_file(tmp, got, err, errlen) != 0)
        goto out;
    if (strcmp(got, md5_hex) != 0) {
        set_err(err, errlen, "%s: MD5 %s, expected %s (damaged or wrong download); " DOWNLOAD_HINT, url, got, md5_hex,
                url);
        goto out;
    }
    char *tar_argv[] = {"tar", "-xzf", tmp, "-C", (char *)parent, NULL};
    status = run(tar_argv);
    if (status != 0) {
        set_err(err, errlen, "%s: tar could not unpack the archive (exit status %d)", url, status);
        goto out;
    }
    if (!set_present(data_dir)) {
        struct cifar_set s;
        char why[512] = "";
        if (cifar_load_test(data_dir, 0, &s, why, sizeof why) == 0) {
            cifar_free(&s);
            cifar_load_train(data_dir, 1, &s, why, sizeof why);
        }
        set_err(err, errlen, "%s: the unpacked archive is not a CIFAR-10 binary set: %s", url, why);
        goto out;
    }
    rc = 0;
out:
    unlink(tmp);
    return rc;
}

int cifar_download(const char *parent, char *data_dir, size_t data_dir_len, char *err, size_t errlen)
{
    return cifar_download_from(parent, CIFAR_ARCHIVE_URL, CIFAR_ARCHIVE_MD5, data_dir, data_dir_len, err, errlen);
}
