/* CIFAR-10 loader on the real subset in ../shared/data (5 x 1017 training images, 1017 test images): shapes,
 * labels and pixels read independently with od, the plane -> HWC conversion, --limit, rejection of damaged
 * copies by file name; and --download's checksum and failure paths (offline: a fake archive over file://). */
#include "io/cifar_data.h"
#include "test_io_util.h"

#include <sys/stat.h>

#define SUBSET "../shared/data/cifar-10-batches-bin-subset"

static const char *const files[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                    "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

static void copy_set(const char *dir)
{
    char src[512], dst[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(src, sizeof src, SUBSET "/%s", files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        copy_prefix(src, dst, (size_t)-1);
    }
}

static void test_real_subset(void)
{
    struct cifar_set tr, te;
    char err[512];
    CHECK(cifar_load_train(SUBSET, 0, &tr, err, sizeof err) == 0, "%s", err);
    CHECK(cifar_load_test(SUBSET, 0, &te, err, sizeof err) == 0, "%s", err);
    if (check_failures())
        return;
    CHECK(tr.n == 5085, "train n = %zu", tr.n);
    CHECK(te.n == 1017, "test n = %zu", te.n);
    /* Labels read with `od -An -tu1 -j $((r*3073)) -N1 FILE`. */
    CHECK(tr.labels[0] == 6 && tr.labels[1] == 9 && tr.labels[1016] == 6, "data_batch_1 labels");
    CHECK(tr.labels[4 * 1017] == 1 && tr.labels[4 * 1017 + 1] == 8 && tr.labels[5084] == 3, "data_batch_5 labels");
    CHECK(te.labels[0] == 3 && te.labels[1] == 8 && te.labels[1016] == 1, "test_batch labels");
    /* First red/green/blue... bytes of records (od -j r*3073+1): image 0 pixel (0,0) red = 59; the red
     * plane continues along row 0, so pixel (0,1) red = 43, pixel (0,2) red = 50. */
    CHECK(tr.images[0] == 59 && tr.images[3] == 43 && tr.images[6] == 50, "data_batch_1 image 0 reds");
    CHECK(te.images[0] == 158 && te.images[3] == 159 && te.images[6] == 165, "test image 0 reds");
    /* test record 1016, green plane (offset 1 + 1024), row 5, column 7: 82. */
    CHECK(te.images[((1016 * 32 + 5) * 32 + 7) * 3 + 1] == 82, "test image 1016 green (5,7)");

    /* Whole conversion against the raw records of one file. */
    FILE *f = fopen(SUBSET "/data_batch_3.bin", "rb");
    unsigned char rec[CIFAR_RECORD_BYTES];
    size_t bad = 0;
    for (size_t i = 0; f && i < 1017 && fread(rec, 1, sizeof rec, f) == sizeof rec; i++) {
        const unsigned char *img = tr.images + (2 * 1017 + i) * CIFAR_IMAGE_BYTES;
        bad += tr.labels[2 * 1017 + i] != rec[0];
        for (int c = 0; c < 3; c++)
            for (int p = 0; p < 1024; p++)
                bad += img[p * 3 + c] != rec[1 + c * 1024 + p];
    }
    if (f)
        fclose(f);
    CHECK(f && bad == 0, "%zu values differ from data_batch_3.bin", bad);

    /* --limit: the first N images across file boundaries, same bytes as the full load. */
    struct cifar_set lim;
    CHECK(cifar_load_train(SUBSET, 1500, &lim, err, sizeof err) == 0, "%s", err);
    CHECK(lim.n == 1500, "limit n = %zu", lim.n);
    CHECK(lim.n == 1500 && memcmp(lim.images, tr.images, 1500 * CIFAR_IMAGE_BYTES) == 0 &&
              memcmp(lim.labels, tr.labels, 1500) == 0,
          "limited load differs");
    cifar_free(&lim);
    CHECK(cifar_load_test(SUBSET, 100000, &lim, err, sizeof err) == 0 && lim.n == 1017, "limit above size");
    cifar_free(&lim);
    cifar_free(&tr);
    cifar_free(&te);
}

/* Expect a load of `dir` to fail with a message containing each of `want1` and `want2`. */
static void expect_reject(const char *dir, int train, size_t limit, const char *want1, const char *want2)
{
    struct cifar_set s;
    char err[512] = "";
    int rc = train ? cifar_load_train(dir, limit, &s, err, sizeof err) : cifar_load_test(dir, limit, &s, err, sizeof err);
    CHECK(rc == -1, "damaged set accepted (want %s)", want1);
    CHECK(strstr(err, want1) && strstr(err, want2), "message \"%s\" lacks \"%s\"/\"%s\"", err, want1, want2);
    if (rc == 0)
        cifar_free(&s);
}

static void test_damaged(void)
{
    char *dir = make_temp_dir("cifar-damaged");
    char path[512];
    copy_set(dir);

    /* Truncated by one byte: rejected even with --limit 1, naming the file. */
    snprintf(path, sizeof path, "%s/data_batch_4.bin", dir);
    copy_prefix(SUBSET "/data_batch_4.bin", path, 1017 * 3073 - 1);
    expect_reject(dir, 1, 1, "data_batch_4.bin", "not a positive multiple");
    copy_prefix(SUBSET "/data_batch_4.bin", path, (size_t)-1);

    /* Label 12 in record 17 of the test batch. */
    snprintf(path, sizeof path, "%s/test_batch.bin", dir);
    poke(path, 17L * 3073, 12);
    expect_reject(dir, 0, 0, "test_batch.bin", "record 17 has label 12");
    copy_prefix(SUBSET "/test_batch.bin", path, (size_t)-1);

    /* Missing file. */
    snprintf(path, sizeof path, "%s/data_batch_2.bin", dir);
    unlink(path);
    expect_reject(dir, 1, 0, "data_batch_2.bin", "No such file");

    /* Empty file. */
    FILE *f = fopen(path, "wb");
    fclose(f);
    expect_reject(dir, 1, 0, "data_batch_2.bin", "size 0");

    /* A directory where a file should be. */
    unlink(path);
    mkdir(path, 0755);
    expect_reject(dir, 1, 0, "data_batch_2.bin", "not a regular file");
    rm_rf(dir);
}

static void test_md5(void)
{
    char *dir = make_temp_dir("cifar-md5");
    char path[512], hex[33], err[256];
    /* RFC 1321 appendix A.5 test suite. */
    static const struct {
        const char *text, *md5;
    } cases[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    snprintf(path, sizeof path, "%s/f", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "wb");
        fputs(cases[i].text, f);
        fclose(f);
        CHECK(cifar_md5_file(path, hex, err, sizeof err) == 0 && strcmp(hex, cases[i].md5) == 0, "md5(\"%s\") = %s",
              cases[i].text, hex);
    }
    /* A multi-block file against md5sum. */
    CHECK(cifar_md5_file(SUBSET "/test_batch.bin", hex, err, sizeof err) == 0, "%s", err);
    char cmd[512], want[64] = "";
    snprintf(cmd, sizeof cmd, "md5sum %s/test_batch.bin", SUBSET);
    FILE *p = popen(cmd, "r");
    CHECK(p && fscanf(p, "%32s", want) == 1, "md5sum did not run");
    if (p)
        pclose(p);
    CHECK(strcmp(hex, want) == 0, "md5 %s, md5sum %s", hex, want);
    CHECK(cifar_md5_file("/nonexistent/x", hex, err, sizeof err) == -1 && strstr(err, "/nonexistent/x"), "%s", err);
    rm_rf(dir);
}

/* SHA-256 against FIPS 180-4's examples and sha256sum, and cifar_verify on the real subset (whose
 * SHA256SUMS is sha256sum's), a truncated copy with SHA256SUMS and one without it. */
static void test_verify(void)
{
    char *dir = make_temp_dir("cifar-verify");
    char path[512], hex[65], err[1024], cmd[1024], want[80] = "";
    static const struct {
        const char *text, *sha;
    } cases[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    snprintf(path, sizeof path, "%s/f", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "wb");
        fputs(cases[i].text, f);
        fclose(f);
        CHECK(cifar_sha256_file(path, hex, err, sizeof err) == 0 && strcmp(hex, cases[i].sha) == 0,
              "sha256(\"%s\") = %s", cases[i].text, hex);
    }
    CHECK(cifar_sha256_file(SUBSET "/test_batch.bin", hex, err, sizeof err) == 0, "%s", err);
    FILE *p = popen("sha256sum " SUBSET "/test_batch.bin", "r");
    CHECK(p && fscanf(p, "%64s", want) == 1, "sha256sum did not run");
    if (p)
        pclose(p);
    CHECK(strcmp(hex, want) == 0, "sha256 %s, sha256sum %s", hex, want);
    unlink(path);

    CHECK(cifar_verify(SUBSET, err, sizeof err) == 0, "the subset: %s", err);
    copy_set(dir);
    snprintf(cmd, sizeof cmd, "cp " SUBSET "/SHA256SUMS '%s'/", dir);
    CHECK(system(cmd) == 0, "cp SHA256SUMS");
    CHECK(cifar_verify(dir, err, sizeof err) == 0, "a copy: %s", err);
    /* data_batch_3.bin cut to 900 whole records: the sum refuses it, and without SHA256SUMS the count. */
    snprintf(path, sizeof path, "%s/data_batch_3.bin", dir);
    CHECK(truncate(path, 900L * CIFAR_RECORD_BYTES) == 0, "truncate");
    CHECK(cifar_verify(dir, err, sizeof err) == -1 && strstr(err, "data_batch_3.bin: SHA-256") &&
              strstr(err, "SHA256SUMS says"), "truncated with sums: %s", err);
    snprintf(path, sizeof path, "%s/SHA256SUMS", dir);
    unlink(path);
    CHECK(cifar_verify(dir, err, sizeof err) == -1 && strstr(err, "data_batch_3.bin: 900 records") &&
              strstr(err, "1017"), "truncated without sums: %s", err);
    /* A listed name that leaves the directory is refused. */
    FILE *f = fopen(path, "w");
    fprintf(f, "%s  ../x\n", want);
    fclose(f);
    CHECK(cifar_verify(dir, err, sizeof err) == -1 && strstr(err, "line 1"), "../x in SHA256SUMS: %s", err);
    rm_rf(dir);
}

/* --download offline: an archive with the official layout served over file:// (curl reads it; wget
 * cannot, so without curl this part is skipped), right and wrong checksums, a URL that cannot be fetched. */
static void test_download(void)
{
    char *dir = make_temp_dir("cifar-download");
    char data_dir[1024], err[1024], cmd[2048], path[1024], hex[33];

    /* Fetch failure: a clear message pointing to --data, nothing left behind. */
    snprintf(path, sizeof path, "%s/dest-fail", dir);
    int rc = cifar_download_from(path, "file:///nonexistent/cifar-10-binary.tar.gz", CIFAR_ARCHIVE_MD5, data_dir,
                                 sizeof data_dir, err, sizeof err);
    CHECK(rc == -1, "fetch of a missing URL succeeded");
    CHECK(strstr(err, "cannot download") && strstr(err, "--data"), "message: %s", err);
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", path);
    CHECK(system(cmd) == 0, "temporary files left in %s", path);

    /* A small fake archive: 10 records per file. */
    snprintf(path, sizeof path, "%s/src/" CIFAR_ARCHIVE_DIR, dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    CHECK(system(cmd) == 0, "mkdir");
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char file[1200];
        snprintf(file, sizeof file, "%s/%s", path, files[i]);
        snprintf(cmd, sizeof cmd, SUBSET "/%s", files[i]);
        copy_prefix(cmd, file, 10 * CIFAR_RECORD_BYTES);
    }
    snprintf(cmd, sizeof cmd, "tar -czf '%s/fake.tar.gz' -C '%s/src' " CIFAR_ARCHIVE_DIR, dir, dir);
    CHECK(system(cmd) == 0, "tar");
    char archive[1024], url[1100];
    snprintf(archive, sizeof archive, "%s/fake.tar.gz", dir);
    snprintf(url, sizeof url, "file://%s", archive);
    CHECK(cifar_md5_file(archive, hex, err, sizeof err) == 0, "%s", err);

    /* Wrong checksum: rejected, nothing unpacked, temporary archive removed. */
    snprintf(path, sizeof path, "%s/dest-bad", dir);
    rc = cifar_download_from(path, url, "00000000000000000000000000000000", data_dir, sizeof data_dir, err,
                             sizeof err);
    CHECK(rc == -1 && strstr(err, "MD5") && strstr(err, hex) && strstr(err, "--data"), "message: %s", err);
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", path);
    CHECK(system(cmd) == 0, "files left in %s after a checksum mismatch", path);

    /* Right checksum: unpacked and loadable; a second call finds the set and fetches nothing (the URL is
     * then deliberately wrong). */
    snprintf(path, sizeof path, "%s/dest-good", dir);
    rc = cifar_download_from(path, url, hex, data_dir, sizeof data_dir, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    struct cifar_set s;
    CHECK(rc == 0 && cifar_load_train(data_dir, 0, &s, err, sizeof err) == 0 && s.n == 50, "unpacked set: %s", err);
    if (rc == 0 && s.n)
        cifar_free(&s);
    rc = cifar_download_from(path, "file:///nonexistent", hex, data_dir, sizeof data_dir, err, sizeof err);
    CHECK(rc == 0, "existing set not reused: %s", err);
    snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s')\" = " CIFAR_ARCHIVE_DIR, path);
    CHECK(system(cmd) == 0, "temporary archive left in %s", path);
    rm_rf(dir);
}

int main(void)
{
    if (access(SUBSET "/data_batch_1.bin", R_OK) != 0) {
        return check_skip("shared", "%s not found (run from the repository root beside ../shared)", SUBSET);
    }
    /* --download fetches with curl (wget cannot read the file:// archive the test serves): no curl, no test. */
    if (system("command -v curl >/dev/null 2>&1") != 0) {
        return check_skip("dep", "curl is needed for the --download tests (contrib/install-deps.sh)");
    }
    test_real_subset();
    test_damaged();
    test_md5();
    test_verify();
    test_download();
    return check_exit("test_io_cifar");
}
