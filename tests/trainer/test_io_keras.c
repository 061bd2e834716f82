/* Keras HDF5 files: the tensor table, write -> read bit-exact round trip, the layout checked by h5py
 * (test_io_h5check.py), files written by h5py the way other Keras versions do, and rejection of wrong
 * shapes, missing parts, truncated and corrupted files with a message naming the file (never a crash). */
#include "io/keras_h5.h"
#include "core/model.h"
#include "test_io_util.h"

#include <stdint.h>
#include <sys/stat.h>

#define PY "/usr/bin/python3 " TEST_SRC_DIR "/test_io_h5check.py"

/* Same values as pattern() in test_io_h5check.py. */
static void fill_pattern(float *v, uint64_t salt)
{
    for (uint64_t i = 0; i < MODEL_NPARAMS; i++)
        v[i] = (float)((double)((i * 2654435761ull + salt) % 1000003ull) / 1000003.0 - 0.5);
}

static const struct keras_train_state state0 = {
    .iterations = 12345678901ull, .epoch = 7, .lr = 4e-4, .rho = 0.9, .decay = 1e-6, .epsilon = 1e-7,
    .seed = (1ull << 63) + 5, .world_size = 4, .threads = 2, .step = 0, .batch = 32, .generator = "test_io_keras",
};

static int have_h5py;

static int py(const char *mode, const char *path, const char *extra)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, PY " %s '%s' %s", mode, path, extra ? extra : "");
    return system(cmd);
}

/* The tensors model.c derives from its layer table: contiguous, kernel then bias, and the numbers of
 * trainer.md (1,250,858 parameters; dense_1 2304 x 512). */
static void test_table(void)
{
    size_t at = 0;
    for (int t = 0; t < model_ntensors(); t++) {
        const struct model_tensor *k = model_tensor(t);
        size_t n = 1;
        for (int i = 0; i < k->rank; i++)
            n *= k->shape[i];
        CHECK(k->offset == at && k->count == n, "tensor %d (%s/%s): offset %zu count %zu", t, k->layer, k->weight,
              k->offset, k->count);
        CHECK(strcmp(k->weight, t % 2 ? "bias:0" : "kernel:0") == 0, "tensor %d weight %s", t, k->weight);
        at += n;
    }
    CHECK(at == MODEL_NPARAMS && at == 1250858, "table covers %zu params", at);
    CHECK(model_ntensors() == 12, "%d tensors", model_ntensors());
    CHECK(model_tensor(8)->shape[0] == 2304 && model_tensor(8)->shape[1] == 512, "dense_1 kernel shape");
}

static void expect_load_error(const char *path, int want_rms, int want_state, const char *want1, const char *want2)
{
    float *p = malloc(MODEL_NPARAMS * sizeof(float)), *r = malloc(MODEL_NPARAMS * sizeof(float));
    struct keras_train_state s;
    char err[1024] = "";
    int rc = keras_load(path, p, want_rms ? r : NULL, want_state ? &s : NULL, err, sizeof err);
    CHECK(rc == -1, "%s: accepted (wanted \"%s\")", path, want1);
    CHECK(strstr(err, path) && strstr(err, want1) && (!want2 || strstr(err, want2)),
          "message \"%s\" lacks \"%s\"/\"%s\"",
          err, want1, want2 ? want2 : "");
    free(p);
    free(r);
}

static void test_round_trip(const char *dir)
{
    char path[1024], err[1024];
    float *params = malloc(MODEL_NPARAMS * sizeof(float)), *rms = malloc(MODEL_NPARAMS * sizeof(float));
    float *p2 = malloc(MODEL_NPARAMS * sizeof(float)), *r2 = malloc(MODEL_NPARAMS * sizeof(float));
    fill_pattern(params, 0);
    fill_pattern(rms, 1);
    snprintf(path, sizeof path, "%s/checkpoint-7.h5", dir);
    CHECK(keras_save(path, params, rms, &state0, err, sizeof err) == 0, "%s", err);

    struct keras_train_state s;
    memset(&s, 0xff, sizeof s);
    memset(p2, 0xff, MODEL_NPARAMS * sizeof(float));
    CHECK(keras_load(path, p2, r2, &s, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(params, p2, MODEL_NPARAMS * sizeof(float)) == 0, "weights differ after the round trip");
    CHECK(memcmp(rms, r2, MODEL_NPARAMS * sizeof(float)) == 0, "accumulators differ after the round trip");
    CHECK(s.iterations == state0.iterations && s.epoch == state0.epoch && s.lr == state0.lr && s.rho == state0.rho &&
              s.decay == state0.decay && s.epsilon == state0.epsilon && s.seed == state0.seed &&
              s.world_size == state0.world_size && s.threads == 2 && s.step == 0 &&
              strcmp(s.generator, "test_io_keras") == 0,
          "state differs after the round trip");
    CHECK(keras_load(path, p2, NULL, NULL, err, sizeof err) == 0, "weights only: %s", err);

    /* Overwriting goes through a new temporary file; nothing but the target is left. */
    CHECK(keras_save(path, params, rms, &state0, err, sizeof err) == 0, "%s", err);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s')\" = checkpoint-7.h5", dir);
    CHECK(system(cmd) == 0, "stray files beside %s", path);

    if (have_h5py)
        CHECK(py("check", path, "--pattern") == 0, "h5py check of %s", path);

    /* A model saved without optimizer state is no checkpoint. */
    char model[1024];
    snprintf(model, sizeof model, "%s/model.h5", dir);
    CHECK(keras_save(model, params, NULL, &state0, err, sizeof err) == 0, "%s", err);
    CHECK(keras_load(model, p2, NULL, &s, err, sizeof err) == 0, "%s", err);
    expect_load_error(model, 1, 0, "no optimizer_weights", NULL);

    /* Files from h5py as other Keras versions write them. */
    if (have_h5py) {
        char variant[1024];
        snprintf(variant, sizeof variant, "%s/variant.h5", dir);
        CHECK(py("write-variant", variant, NULL) == 0, "write-variant");
        fill_pattern(params, 7);
        CHECK(keras_load(variant, p2, NULL, NULL, err, sizeof err) == 0, "variant: %s", err);
        CHECK(memcmp(params, p2, MODEL_NPARAMS * sizeof(float)) == 0, "variant weights differ");
        expect_load_error(variant, 0, 1, "batchai_training_state", NULL);

        char wrong[1024];
        snprintf(wrong, sizeof wrong, "%s/wrong-shape.h5", dir);
        CHECK(py("write-wrong-shape", wrong, NULL) == 0, "write-wrong-shape");
        expect_load_error(wrong, 0, 0, "model_weights/dense_1/dense_1/kernel:0: shape (2304,256), expected (2304,512)",
                          NULL);
    }

    /* Saving into a missing directory fails cleanly. */
    char missing[1024];
    snprintf(missing, sizeof missing, "%s/no/such/dir/m.h5", dir);
    CHECK(keras_save(missing, params, rms, &state0, err, sizeof err) == -1 && strstr(err, "no/such/dir"), "%s", err);
    free(params);
    free(rms);
    free(p2);
    free(r2);
}

static void test_damaged(const char *dir)
{
    char good[1024], bad[1024];
    snprintf(good, sizeof good, "%s/checkpoint-7.h5", dir);
    snprintf(bad, sizeof bad, "%s/damaged.h5", dir);
    struct stat st;
    CHECK(stat(good, &st) == 0, "no file to damage");
    if (check_failures())
        return;
    size_t size = (size_t)st.st_size;

    expect_load_error("/nonexistent/model.h5", 0, 0, "No such file", NULL);
    FILE *f = fopen(bad, "w");
    fputs("not HDF5 at all\n", f);
    fclose(f);
    expect_load_error(bad, 0, 0, "not an HDF5 file", NULL);

    /* Truncated at many lengths: always an error naming the file. */
    static const double fractions[] = {0, 0.0001, 0.001, 0.003, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999};
    for (size_t i = 0; i < sizeof fractions / sizeof fractions[0]; i++) {
        copy_prefix(good, bad, (size_t)(fractions[i] * (double)size));
        expect_load_error(bad, 1, 1, "", NULL);
    }
    copy_prefix(good, bad, size - 1);
    expect_load_error(bad, 1, 1, "", NULL);

    /* Bytes overwritten in the metadata (HDF5 keeps it in the first few KiB and after the raw data here):
     * either an error naming the file or a successful load, never a crash. */
    uint64_t x = 12345;
    int rejected = 0, runs = 0;
    for (int i = 0; i < 60; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        long at = i < 40 ? (long)((x >> 33) % 8192) : (long)(size - 1 - (x >> 33) % 16384);
        copy_prefix(good, bad, (size_t)-1);
        poke(bad, at, (unsigned char)(x >> 13));
        float *p = malloc(MODEL_NPARAMS * sizeof(float)), *r = malloc(MODEL_NPARAMS * sizeof(float));
        struct keras_train_state s;
        char err[1024] = "";
        int rc = keras_load(bad, p, r, &s, err, sizeof err);
        runs++;
        if (rc != 0) {
            rejected++;
            CHECK(strstr(err, bad) != NULL, "message without the file name: %s", err);
        }
        free(p);
        free(r);
    }
    /* One flipped low bit in a weight: the checksum refuses it, for --resume and evaluate alike. A NaN
     * weight: refused as such (whether or not a checksum covers it). */
    if (have_h5py) {
        copy_prefix(good, bad, (size_t)-1);
        CHECK(py("damage", bad, "flip") == 0, "damage flip");
        expect_load_error(bad, 1, 1, "weights_sha256", "damaged after it was written");
        expect_load_error(bad, 0, 0, "weights_sha256", NULL);
        copy_prefix(good, bad, (size_t)-1);
        CHECK(py("damage", bad, "nan") == 0, "damage nan");
        expect_load_error(bad, 0, 0, "model_weights/dense_1/dense_1/kernel:0: non-finite value nan at index 0", NULL);
    }
    check_note("corrupted copies: %d of %d rejected, the rest loaded (bytes that carry no checked structure)",
           rejected, runs);
    unlink(bad);
}

int main(void)
{
    /* h5py is the independent reader the layout is checked against: without it this test proves little. */
    have_h5py = system("/usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null") == 0;
    if (!have_h5py) {
        return check_skip("dep", "Debian's python3-h5py and python3-numpy are needed (contrib/install-deps.sh)");
    }
    char *dir = make_temp_dir("keras-h5");
    test_table();
    test_round_trip(dir);
    test_damaged(dir);
    rm_rf(dir);
    return check_exit("test_io_keras");
}
