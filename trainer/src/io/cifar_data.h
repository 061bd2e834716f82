/* cifar_data: the CIFAR-10 binary format ("cifar-10-batches-bin") and its download.
 *
 * Format: data_batch_1.bin .. data_batch_5.bin (training, in that order) and test_batch.bin. Each file is a
 * sequence of 3073-byte records: one label byte (0..9), then 3072 pixel bytes as three 32x32 planes, red,
 * green, blue, each row-major. The official files hold 10000 records each; any file whose size is a
 * multiple of 3073 is accepted (the subset in ../shared/data holds 1017 per file).
 *
 * Output layout: images are interleaved HWC (the set is NHWC, as Keras's x_train with shape (N,32,32,3)):
 *   images[((n * 32 + y) * 32 + x) * 3 + c]   c = 0 red, 1 green, 2 blue
 * labels[n] in 0..9. The values stay uint8; augment.h turns them into float32 / 255.
 *
 * Errors: functions return 0 on success and -1 on failure with a message in err[errlen] (when err is not
 * NULL) that names the file and what is wrong, e.g.
 *   "cifar/data_batch_3.bin: size 3125240 is not a multiple of the 3073-byte record"
 *   "cifar/test_batch.bin: record 17 has label 12 (expected 0..9)"
 *   "cifar/data_batch_2.bin: cannot open: No such file or directory"
 * Nothing is allocated on failure. */
#ifndef TRAINER_CIFAR_DATA_H
#define TRAINER_CIFAR_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "core/image.h" /* CIFAR_H, CIFAR_W, CIFAR_C, CIFAR_IMAGE_BYTES */

#define CIFAR_RECORD_BYTES (1 + CIFAR_IMAGE_BYTES)      /* 3073 */
#define CIFAR_CLASSES 10
#define CIFAR_TRAIN_FILES 5

/* The official archive (what keras.datasets.cifar10 uses, binary flavour) and its MD5 as published on
 * https://www.cs.toronto.edu/~kriz/cifar.html. */
#define CIFAR_ARCHIVE_URL "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
#define CIFAR_ARCHIVE_MD5 "c32a1d4ab5d03f1284b67883e8d87530"
#define CIFAR_ARCHIVE_DIR "cifar-10-batches-bin" /* the directory the archive unpacks to */

struct cifar_set {
    size_t n;        /* images */
    uint8_t *images; /* n * CIFAR_IMAGE_BYTES, NHWC */
    uint8_t *labels; /* n, each 0..9 */
};

/* The training set: data_batch_1..5.bin of `dir`, concatenated in that order. limit > 0 keeps only the
 * first `limit` images (fewer when the set is smaller) and reads no further than needed; every file is
 * still checked to exist and have a valid size, so a damaged set fails early whatever the limit. */
int cifar_load_train(const char *dir, size_t limit, struct cifar_set *out, char *err, size_t errlen);

/* The test set: test_batch.bin of `dir`; limit as above. */
int cifar_load_test(const char *dir, size_t limit, struct cifar_set *out, char *err, size_t errlen);

/* Frees what a load allocated and zeroes *s; safe on a zeroed set. */
void cifar_free(struct cifar_set *s);

/* Checks the set in `dir` before training (cifar-train does, at start, on every rank):
 *  - with a `dir`/SHA256SUMS file (sha256sum's format: 64 hex digits, one or two spaces or " *", a plain
 *    file name): every file it lists must exist and have that SHA-256, else e.g.
 *      "cifar/data_batch_3.bin: SHA-256 5e0c...; SHA256SUMS says 9a1f... (damaged or truncated file)";
 *  - always: the six files hold the same number of records (the official set 10000 each, ../shared's
 *    subset 1017), so a file truncated on a record boundary is refused even without SHA256SUMS:
 *      "cifar/data_batch_3.bin: 900 records, data_batch_1.bin has 1017 (truncated file?)".
 * Returns 0, or -1 with the message set. */
int cifar_verify(const char *dir, char *err, size_t errlen);

/* SHA-256 of a file's contents as 64 lowercase hex digits plus NUL in hex[65]. */
int cifar_sha256_file(const char *path, char hex[65], char *err, size_t errlen);

/* --download: make sure `<parent>/cifar-10-batches-bin` holds a complete set, fetching the official archive
 * when it does not. Steps: if the six files are already there with valid sizes, nothing is fetched.
 * Otherwise the archive is fetched with curl (or wget when curl is absent) into a temporary file in
 * `parent`, its MD5 checked against CIFAR_ARCHIVE_MD5, unpacked with tar into `parent`, and the temporary
 * file removed. On success the data directory's path is written to data_dir[data_dir_len]. A failed fetch
 * (no network, no curl/wget) or a checksum mismatch is an error whose message says what failed and tells
 * the user to download the archive by hand and pass --data DIR. `parent` is created if missing. */
int cifar_download(const char *parent, char *data_dir, size_t data_dir_len, char *err, size_t errlen);

/* The same with an explicit source, for tests (curl also accepts file:// URLs) and mirrors: `url` is
 * fetched and must have MD5 `md5_hex` (32 lowercase hex digits). */
int cifar_download_from(const char *parent, const char *url, const char *md5_hex, char *data_dir,
                        size_t data_dir_len, char *err, size_t errlen);

/* MD5 of a file's contents as 32 lowercase hex digits plus NUL in hex[33] (RFC 1321, own implementation). */
int cifar_md5_file(const char *path, char hex[33], char *err, size_t errlen);

#endif
