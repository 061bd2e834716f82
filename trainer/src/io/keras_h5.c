/* keras_h5: Keras 2.1.6 HDF5 model/checkpoint files for the tutorial's CIFAR-10 model. Contract and file
 * layout in keras_h5.h. */
#include "io/keras_h5.h"

#include "io/atomic_file.h"
#include "core/model.h"
#include "sha256.h" /* the project's one SHA-256 */
#include "strbuf.h"
#include "write_all.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATE_GROUP "batchai_training_state"

/* ---- error context: the first failure wins; later calls see ctx->failed and do nothing useful ---- */

struct ctx {
    const char *file;
    char *err;
    size_t errlen;
    int failed;
};

static void fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct ctx *c, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = 1;
    if (!c->err || c->errlen == 0)
        return;
    int n = snprintf(c->err, c->errlen, "%s: ", c->file);
    if (n < 0 || (size_t)n >= c->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* ---- JSON of model_config and training_config ---- */

/* A double as Python's repr() prints it (shortest text that reads back to the same value, ".0" on
 * integral values), which is what json.dumps writes for floats. */
static void put_pyfloat(struct sbuf *b, double v)
{
    char t[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*g", prec, v);
        if (strtod(t, NULL) == v)
            break;
    }
    sb_printf(b, "%s%s", t, strpbrk(t, ".e") ? "" : ".0");
}

static void json_text(void *b, const char *t) { sb_puts(b, t); }
static void json_pyfloat(void *b, double v) { put_pyfloat(b, v); }

/* {"class_name": "Sequential", "config": [...]}: Keras 2.1.6's Sequential.get_config() is the list of
 * {"class_name", "config"} of its layers; each config starts with Layer's name and trainable (plus
 * batch_input_shape and dtype on the input layer), then the class's own keys in Keras's order. */
static void model_config_json(struct sbuf *b)
{
    sb_printf(b, "{\"class_name\": \"Sequential\", \"config\": [");
    for (int i = 0; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i);
        sb_printf(b, "%s{\"class_name\": \"%s\", \"config\": {\"name\": \"%s\", \"trainable\": true", i ? ", " : "",
            L->keras_class, L->name);
        if (i == 0)
            sb_printf(b, ", \"batch_input_shape\": [null, %d, %d, %d], \"dtype\": \"float32\"", MODEL_IN_H, MODEL_IN_W,
                MODEL_IN_C);
        model_keras_config(L, &(struct model_json){json_text, json_pyfloat, b});
        sb_printf(b, "}}");
    }
    sb_printf(b, "]}");
}

/* Keras's optimizer.get_config() reads lr, rho and decay back from float32 backend variables, so the JSON
 * holds their float32 roundings; epsilon is a Python float. */
static void training_config_json(struct sbuf *b, const struct keras_train_state *s)
{
    sb_printf(b, "{\"optimizer_config\": {\"class_name\": \"RMSprop\", \"config\": {\"lr\": ");
    put_pyfloat(b, (double)(float)s->lr);
    sb_printf(b, ", \"rho\": ");
    put_pyfloat(b, (double)(float)s->rho);
    sb_printf(b, ", \"decay\": ");
    put_pyfloat(b, (double)(float)s->decay);
    sb_printf(b, ", \"epsilon\": ");
    put_pyfloat(b, s->epsilon);
    sb_printf(b, "}}, \"loss\": \"categorical_crossentropy\", \"metrics\": [\"accuracy\"], \"sample_weight_mode\": null, "
           "\"loss_weights\": null}");
}

/* ---- writing ---- */

/* Create attribute `name` of obj with file_type over space, write data (as mem_type), close it. */
static void attr_write(struct ctx *c, hid_t obj, const char *name, hid_t file_type, hid_t space, hid_t mem_type,
                       const void *data)
{
    hid_t a = data ? H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (a < 0 || H5Awrite(a, mem_type, data) < 0)
        fail(c, "cannot write attribute %s", name);
    if (a >= 0)
        H5Aclose(a);
}

/* Scalar fixed-length string attribute, as h5py stores a Python bytes value. */
static void attr_string(struct ctx *c, hid_t obj, const char *name, const char *value)
{
    if (c->failed)
        return;
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, strlen(value) > 0 ? strlen(value) : 1);
    H5Tset_strpad(type, H5T_STR_NULLPAD);
    hid_t space = H5Screate(H5S_SCALAR);
    attr_write(c, obj, name, type, space, type, value);
    H5Sclose(space);
    H5Tclose(type);
}

/* 1-D array of fixed-length strings padded to the longest, as h5py stores a list of bytes. n == 0 gives
 * what h5py makes of Keras's empty list: an empty float64 array. */
static void attr_string_list(struct ctx *c, hid_t obj, const char *name, const char *const *v, size_t n)
{
    if (c->failed)
        return;
    hsize_t dim = n;
    hid_t space = H5Screate_simple(1, &dim, NULL);
    size_t width = 1;
    for (size_t i = 0; i < n; i++)
        if (strlen(v[i]) > width)
            width = strlen(v[i]);
    char *data = calloc(n ? n : 1, width);
    hid_t type = n ? H5Tcopy(H5T_C_S1) : H5Tcopy(H5T_IEEE_F64LE);
    if (n) {
        H5Tset_size(type, width);
        H5Tset_strpad(type, H5T_STR_NULLPAD);
        for (size_t i = 0; i < n; i++)
            memcpy(data + i * width, v[i], strlen(v[i]));
    }
    attr_write(c, obj, name, type, space, n ? type : H5T_NATIVE_DOUBLE, data);
    free(data);
    H5Tclose(type);
    H5Sclose(space);
}

static void attr_scalar(struct ctx *c, hid_t obj, const char *name, hid_t file_type, hid_t mem_type, const void *v)
{
    if (c->failed)
        return;
    hid_t space = H5Screate(H5S_SCALAR);
    attr_write(c, obj, name, file_type, space, mem_type, v);
    H5Sclose(space);
}

static void write_tensor(struct ctx *c, hid_t loc, const char *path, const struct model_tensor *t, const float *v)
{
    if (c->failed)
        return;
    hsize_t dims[4];
    for (int i = 0; i < t->rank; i++)
        dims[i] = t->shape[i];
    hid_t space = H5Screate_simple(t->rank, dims, NULL);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t d = H5Dcreate2(loc, path, H5T_IEEE_F32LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v + t->offset) < 0)
        fail(c, "cannot write dataset %s", path);
    if (d >= 0)
        H5Dclose(d);
    H5Pclose(lcpl);
    H5Sclose(space);
}

static hid_t group_create(struct ctx *c, hid_t loc, const char *name)
{
    if (c->failed)
        return -1;
    hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        fail(c, "cannot create group %s", name);
    return g;
}

static void write_model_weights(struct ctx *c, hid_t file, const float *params)
{
    hid_t mw = group_create(c, file, "model_weights");
    if (mw < 0)
        return;
    const size_t nl = (size_t)model_nlayers();
    const char **names = calloc(nl, sizeof *names);
    if (!names)
        fail(c, "out of memory");
    for (size_t i = 0; i < nl && names; i++)
        names[i] = model_layer((int)i)->name;
    attr_string_list(c, mw, "layer_names", names, nl);
    free(names);
    attr_string(c, mw, "backend", "tensorflow");
    attr_string(c, mw, "keras_version", KERAS_VERSION);
    for (size_t i = 0; i < nl && !c->failed; i++) {
        const struct model_layer *L = model_layer((int)i);
        hid_t g = group_create(c, mw, L->name);
        if (g < 0)
            break;
        char wn[2][64];
        const char *wnp[2] = {wn[0], wn[1]};
        for (int j = 0; j < L->ntensors; j++) {
            const struct model_tensor *t = model_tensor(L->tensor + j);
            snprintf(wn[j], sizeof wn[j], "%s/%s", L->name, t->weight);
            write_tensor(c, g, wn[j], t, params);
        }
        attr_string_list(c, g, "weight_names", wnp, (size_t)L->ntensors);
        H5Gclose(g);
    }
    H5Gclose(mw);
}

static void write_optimizer_weights(struct ctx *c, hid_t file, const float *rms)
{
    hid_t ow = group_create(c, file, "optimizer_weights");
    if (ow < 0)
        return;
    const size_t n = (size_t)model_ntensors();
    char(*names)[64] = calloc(n, sizeof *names);
    const char **np = calloc(n, sizeof *np);
    if (!names || !np)
        fail(c, "out of memory");
    for (size_t t = 0; t < n && !c->failed; t++) {
        /* TensorFlow's unique-naming of the unnamed accumulator variables Keras creates under
         * name_scope("training/RMSprop"): Variable, Variable_1, ... */
        if (t == 0)
            snprintf(names[t], sizeof names[t], "training/RMSprop/Variable:0");
        else
            snprintf(names[t], sizeof names[t], "training/RMSprop/Variable_%zu:0", t);
        np[t] = names[t];
        write_tensor(c, ow, names[t], model_tensor((int)t), rms);
    }
    attr_string_list(c, ow, "weight_names", np, n);
    free(np);
    free(names);
    H5Gclose(ow);
}

/* The training state's attributes, one table for writing and reading so the two cannot drift apart. */
enum state_kind { SK_U64, SK_I64, SK_F64 };
static const struct {
    const char *name;
    size_t offset;
    enum state_kind kind;
    int optional; /* absent in checkpoints of earlier versions: read as 0 */
} state_fields[] = {
    { "iterations", offsetof(struct keras_train_state, iterations), SK_U64, 0 },
    { "epoch", offsetof(struct keras_train_state, epoch), SK_I64, 0 },
    { "lr", offsetof(struct keras_train_state, lr), SK_F64, 0 },
    { "rho", offsetof(struct keras_train_state, rho), SK_F64, 0 },
    { "decay", offsetof(struct keras_train_state, decay), SK_F64, 0 },
    { "epsilon", offsetof(struct keras_train_state, epsilon), SK_F64, 0 },
    { "seed", offsetof(struct keras_train_state, seed), SK_U64, 0 },
    { "world_size", offsetof(struct keras_train_state, world_size), SK_I64, 0 },
    { "threads", offsetof(struct keras_train_state, threads), SK_I64, 0 },
    { "step", offsetof(struct keras_train_state, step), SK_I64, 0 },
    { "batch", offsetof(struct keras_train_state, batch), SK_I64, 0 },
    { "best_epoch", offsetof(struct keras_train_state, best_epoch), SK_I64, 1 },
    { "best_val_acc", offsetof(struct keras_train_state, best_val_acc), SK_F64, 1 },
    { "part_loss_sum", offsetof(struct keras_train_state, part_loss_sum), SK_F64, 1 },
    { "part_correct", offsetof(struct keras_train_state, part_correct), SK_I64, 1 },
    { "part_seen", offsetof(struct keras_train_state, part_seen), SK_I64, 1 },
    { "part_seconds", offsetof(struct keras_train_state, part_seconds), SK_F64, 1 },
};
#define N_STATE_FIELDS (sizeof state_fields / sizeof state_fields[0])

/* HDF5's type ids are run-time values, so the table holds a kind and this maps it. */
static hid_t state_mem_type(enum state_kind k)
{
    return k == SK_F64 ? H5T_NATIVE_DOUBLE : k == SK_U64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64;
}

/* SHA-256 of one array of MODEL_NPARAMS floats, as the float32 bytes of this little-endian host: the same
 * bytes as its datasets hold. */
static void array_sha256(const float *v, char hex[65])
{
    bai_sha256_hex(v, MODEL_NPARAMS * sizeof(float), hex);
}

static void write_state(struct ctx *c, hid_t file, const struct keras_train_state *s, const float *params,
                        const float *rms)
{
    hid_t g = group_create(c, file, STATE_GROUP);
    if (g < 0)
        return;
    const int64_t format = KERAS_STATE_FORMAT;
    char sum[65];
    attr_scalar(c, g, "format_version", H5T_STD_I64LE, H5T_NATIVE_INT64, &format);
    attr_string(c, g, "generator", s->generator[0] ? s->generator : "unknown");
    array_sha256(params, sum);
    attr_string(c, g, "weights_sha256", sum);
    if (rms) {
        array_sha256(rms, sum);
        attr_string(c, g, "optimizer_sha256", sum);
    }
    for (size_t i = 0; i < N_STATE_FIELDS; i++) {
        const enum state_kind k = state_fields[i].kind;
        const hid_t file_type = k == SK_F64 ? H5T_IEEE_F64LE : k == SK_U64 ? H5T_STD_U64LE : H5T_STD_I64LE;
        attr_scalar(c, g, state_fields[i].name, file_type, state_mem_type(k),
                    (const char *)s + state_fields[i].offset);
    }
    H5Gclose(g);
}

/* HDF5 prints its error stack to stderr by default; our messages replace it. */
struct quiet {
    H5E_auto2_t func;
    void *data;
};
static struct quiet hdf5_quiet(void)
{
    struct quiet q = {0};
    H5Eget_auto2(H5E_DEFAULT, &q.func, &q.data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return q;
}
static void hdf5_restore(struct quiet q) { H5Eset_auto2(H5E_DEFAULT, q.func, q.data); }

/* The whole file is built in memory (HDF5's core driver, no backing store) and written with write(2), so
 * that a full disk is one clear errno on our own descriptor instead of an HDF5 failure deep inside a flush
 * (which also left HDF5 with a half-closed file that crashed its shutdown at exit). */
int keras_save(const char *path, const float *params, const float *rms, const struct keras_train_state *state,
               char *err, size_t errlen)
{
    struct ctx c = {.file = path, .err = err, .errlen = errlen};
    struct atomic_file af;
    if (atomic_file_begin(&af, path, err, errlen) != 0)
        return -1;
    struct quiet q = hdf5_quiet();
    struct sbuf mb = {0}, tb = {0};
    model_config_json(&mb);
    training_config_json(&tb, state);
    char *mc = sb_finish(&mb), *tc = sb_finish(&tb);
    if (!mc || !tc)
        fail(&c, "out of memory");

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    H5Pset_fapl_core(fapl, 1 << 20, 0);
    hid_t file = c.failed ? -1 : H5Fcreate(af.tmp_path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    void *image = NULL;
    ssize_t size = -1;
    if (file < 0) {
        fail(&c, "cannot create an HDF5 file in memory");
    } else {
        attr_string(&c, file, "keras_version", KERAS_VERSION);
        attr_string(&c, file, "backend", "tensorflow");
        attr_string(&c, file, "model_config", mc);
        attr_string(&c, file, "training_config", tc);
        write_model_weights(&c, file, params);
        if (rms)
            write_optimizer_weights(&c, file, rms);
        write_state(&c, file, state, params, rms);
        if (!c.failed && (H5Fflush(file, H5F_SCOPE_LOCAL) < 0 || (size = H5Fget_file_image(file, NULL, 0)) <= 0 ||
                          !(image = malloc((size_t)size)) || H5Fget_file_image(file, image, (size_t)size) != size))
            fail(&c, "cannot build the HDF5 image in memory (%zd bytes)", size);
        if (H5Fclose(file) < 0)
            fail(&c, "cannot close the HDF5 file in memory");
    }
    free(mc);
    free(tc);
    hdf5_restore(q);
    if (!c.failed && bai_write_all(af.fd, image, (size_t)size) != 0)
        fail(&c, "cannot write: %s", strerror(errno));
    free(image);
    if (c.failed) {
        atomic_file_abort(&af);
        return -1;
    }
    return atomic_file_commit(&af, err, errlen);
}

/* ---- reading ---- */

/* Read a string attribute (scalar or 1-D; fixed- or variable-length, as Keras/h5py versions differ) into
 * a malloc'd array of malloc'd strings. An empty numeric array (a layer without weights) gives n = 0.
 * Returns the array (possibly empty, never NULL on success) and sets *n; NULL on failure. */
static char **read_string_list(struct ctx *c, hid_t obj, const char *objname, const char *attr, size_t *n)
{
    *n = 0;
    if (c->failed)
        return NULL;
    if (H5Aexists(obj, attr) <= 0) {
        fail(c, "%s: missing attribute %s", objname, attr);
        return NULL;
    }
    hid_t a = H5Aopen(obj, attr, H5P_DEFAULT);
    hid_t type = a >= 0 ? H5Aget_type(a) : -1;
    hid_t space = a >= 0 ? H5Aget_space(a) : -1;
    char **out = NULL;
    if (type < 0 || space < 0) {
        fail(c, "%s: unreadable attribute %s", objname, attr);
        goto done;
    }
    hssize_t count = H5Sget_simple_extent_npoints(space);
    int rank = H5Sget_simple_extent_ndims(space);
    if (count < 0 || rank > 1 || count > 100000) {
        fail(c, "%s: attribute %s is not a list", objname, attr);
        goto done;
    }
    if (H5Tget_class(type) != H5T_STRING) {
        if (count == 0) { /* Keras's empty list */
            out = calloc(1, sizeof *out);
            if (!out)
                fail(c, "out of memory");
            goto done;
        }
        fail(c, "%s: attribute %s is not a string list", objname, attr);
        goto done;
    }
    out = calloc((size_t)count + 1, sizeof *out);
    if (!out) {
        fail(c, "out of memory");
        goto done;
    }
    if (H5Tis_variable_str(type) > 0) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(type)); /* h5py 3 writes str as UTF-8; HDF5 will not convert csets */
        char **tmp = calloc((size_t)count + 1, sizeof *tmp);
        if (!tmp || H5Aread(a, mt, tmp) < 0) {
            fail(c, "%s: cannot read attribute %s", objname, attr);
        } else {
            for (hssize_t i = 0; i < count; i++)
                out[i] = strdup(tmp[i] ? tmp[i] : "");
            H5Dvlen_reclaim(mt, space, H5P_DEFAULT, tmp);
        }
        free(tmp);
        H5Tclose(mt);
    } else {
        size_t width = H5Tget_size(type);
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, width);
        H5Tset_strpad(mt, H5T_STR_NULLPAD);
        H5Tset_cset(mt, H5Tget_cset(type));
        char *raw = calloc((size_t)count, width);
        if (!raw || width == 0 || H5Aread(a, mt, raw) < 0) {
            fail(c, "%s: cannot read attribute %s", objname, attr);
        } else {
            for (hssize_t i = 0; i < count; i++)
                out[i] = strndup(raw + (size_t)i * width, width);
        }
        free(raw);
        H5Tclose(mt);
    }
    for (hssize_t i = 0; i < count && !c->failed; i++)
        if (!out[i])
            fail(c, "out of memory");
    if (!c->failed)
        *n = (size_t)count;
done:
    if (c->failed && out) {
        for (size_t i = 0; out[i]; i++)
            free(out[i]);
        free(out);
        out = NULL;
    }
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (a >= 0)
        H5Aclose(a);
    return out;
}

static void free_list(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void shape_text(char *b, size_t len, const hsize_t *d, int rank)
{
    size_t at = 0;
    at += (size_t)snprintf(b + at, len - at, "(");
    for (int i = 0; i < rank && at < len; i++)
        at += (size_t)snprintf(b + at, len - at, "%s%llu", i ? "," : "", (unsigned long long)d[i]);
    if (at < len)
        snprintf(b + at, len - at, ")");
}

/* Open `group_path`/`name` and read it into dst + t->offset after checking it is a float dataset of t's
 * shape. `shown` is the dataset's full path used in messages. */
static void read_tensor(struct ctx *c, hid_t loc, const char *name, const char *shown, const struct model_tensor *t,
                        float *dst)
{
    if (c->failed)
        return;
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0 || H5Oexists_by_name(loc, name, H5P_DEFAULT) <= 0) {
        fail(c, "%s: missing dataset", shown);
        return;
    }
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) {
        fail(c, "%s: not a dataset", shown);
        return;
    }
    hid_t type = H5Dget_type(d), space = H5Dget_space(d);
    hsize_t dims[8];
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (type < 0 || H5Tget_class(type) != H5T_FLOAT) {
        fail(c, "%s: not a floating-point dataset", shown);
    } else if (rank < 0 || rank > 8) {
        fail(c, "%s: unreadable shape", shown);
    } else {
        H5Sget_simple_extent_dims(space, dims, NULL);
        int same = rank == t->rank;
        for (int i = 0; same && i < rank; i++)
            same = dims[i] == t->shape[i];
        if (!same) {
            char got[128], want[128];
            hsize_t w[4];
            for (int i = 0; i < t->rank; i++)
                w[i] = t->shape[i];
            shape_text(got, sizeof got, dims, rank);
            shape_text(want, sizeof want, w, t->rank);
            fail(c, "%s: shape %s, expected %s", shown, got, want);
        } else if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst + t->offset) < 0) {
            fail(c, "%s: cannot read data (file truncated or corrupt)", shown);
        } else {
            for (size_t i = 0; i < t->count; i++)
                if (!isfinite(dst[t->offset + i])) {
                    fail(c, "%s: non-finite value %g at index %zu (a diverged model: refused)", shown,
                         (double)dst[t->offset + i], i);
                    break;
                }
        }
    }
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    H5Dclose(d);
}

static hid_t group_open(struct ctx *c, hid_t loc, const char *name, const char *shown)
{
    if (c->failed)
        return -1;
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) {
        fail(c, "missing group %s", shown);
        return -1;
    }
    hid_t g = H5Gopen2(loc, name, H5P_DEFAULT);
    if (g < 0)
        fail(c, "%s is not a group", shown);
    return g;
}

/* Keras's rule: the layers listed in layer_names that have weights are matched, in order, with the model's
 * layers that have weights. So a file from Keras whose layers were numbered differently (conv2d_5...)
 * still loads, as it would in Keras; what must match is the count, the order and every shape. */
static void read_model_weights(struct ctx *c, hid_t file, float *params)
{
    hid_t mw = group_open(c, file, "model_weights", "model_weights");
    if (mw < 0)
        return;
    size_t nl = 0;
    char **lnames = read_string_list(c, mw, "model_weights", "layer_names", &nl);
    int want = 0; /* the model's layers with weights */
    for (int i = 0; i < model_nlayers(); i++)
        want += model_layer(i)->ntensors > 0;
    int next = 0; /* where to look for the model layer that the file's next layer with weights matches */
    size_t k = 0; /* weight layers matched so far */
    for (size_t i = 0; i < nl && !c->failed; i++) {
        char shown[512];
        snprintf(shown, sizeof shown, "model_weights/%s", lnames[i]);
        hid_t g = group_open(c, mw, lnames[i], shown);
        if (g < 0)
            break;
        size_t nw = 0;
        char **wnames = read_string_list(c, g, shown, "weight_names", &nw);
        if (!c->failed && nw > 0) {
            while (next < model_nlayers() && model_layer(next)->ntensors == 0)
                next++;
            const struct model_layer *L = next < model_nlayers() ? model_layer(next++) : NULL;
            if (!L)
                fail(c, "%s: more layers with weights than the model's %d", shown, want);
            else if (nw != (size_t)L->ntensors)
                fail(c, "%s: %zu weights, expected %d (kernel, bias) for %s", shown, nw, L->ntensors, L->name);
            for (size_t j = 0; j < nw && !c->failed; j++) {
                const struct model_tensor *t = model_tensor(L->tensor + (int)j);
                char dshown[1024];
                snprintf(dshown, sizeof dshown, "%s/%s", shown, wnames[j]);
                size_t wl = strlen(wnames[j]), sl = strlen(t->weight);
                if (wl < sl || strcmp(wnames[j] + wl - sl, t->weight) != 0)
                    fail(c, "%s: weight %zu is named %s, expected .../%s", shown, j, wnames[j], t->weight);
                read_tensor(c, g, wnames[j], dshown, t, params);
            }
            k++;
        }
        free_list(wnames, nw);
        H5Gclose(g);
    }
    if (!c->failed && k != (size_t)want)
        fail(c, "model_weights: %zu layers with weights, expected %d", k, want);
    free_list(lnames, nl);
    H5Gclose(mw);
}

static void read_optimizer_weights(struct ctx *c, hid_t file, float *rms)
{
    if (!c->failed && H5Lexists(file, "optimizer_weights", H5P_DEFAULT) <= 0) {
        fail(c, "no optimizer_weights: not a checkpoint (saved without optimizer state)");
        return;
    }
    hid_t ow = group_open(c, file, "optimizer_weights", "optimizer_weights");
    if (ow < 0)
        return;
    size_t n = 0;
    char **names = read_string_list(c, ow, "optimizer_weights", "weight_names", &n);
    if (!c->failed && n != (size_t)model_ntensors())
        fail(c, "optimizer_weights: %zu weights, expected %d RMSprop accumulators", n, model_ntensors());
    for (size_t t = 0; t < n && !c->failed; t++) {
        char shown[512];
        snprintf(shown, sizeof shown, "optimizer_weights/%s", names[t]);
        read_tensor(c, ow, names[t], shown, model_tensor((int)t), rms);
    }
    free_list(names, n);
    H5Gclose(ow);
}

static void read_attr_scalar(struct ctx *c, hid_t g, const char *name, H5T_class_t cls, hid_t mem_type, void *v)
{
    if (c->failed)
        return;
    if (H5Aexists(g, name) <= 0) {
        fail(c, STATE_GROUP ": missing attribute %s", name);
        return;
    }
    hid_t a = H5Aopen(g, name, H5P_DEFAULT);
    hid_t type = a >= 0 ? H5Aget_type(a) : -1, space = a >= 0 ? H5Aget_space(a) : -1;
    if (type < 0 || space < 0 || H5Tget_class(type) != cls || H5Sget_simple_extent_npoints(space) != 1)
        fail(c, STATE_GROUP ": attribute %s is not a scalar %s", name, cls == H5T_FLOAT ? "float" : "integer");
    else if (H5Aread(a, mem_type, v) < 0)
        fail(c, STATE_GROUP ": cannot read attribute %s", name);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (a >= 0)
        H5Aclose(a);
}

/* One checksum written by write_state against the array just read. `required`: a checkpoint of ours must
 * have it; otherwise (evaluate reading any Keras file) an absent one passes. */
static void check_sum(struct ctx *c, hid_t g, const char *name, const float *v, int required)
{
    if (c->failed || (!required && H5Aexists(g, name) <= 0))
        return;
    size_t n = 0;
    char **want = read_string_list(c, g, STATE_GROUP, name, &n);
    char got[65];
    array_sha256(v, got);
    if (!c->failed && n != 1)
        fail(c, STATE_GROUP ": attribute %s is not one string", name);
    else if (!c->failed && strcmp(want[0], got) != 0)
        fail(c, STATE_GROUP ": %s %s, the data read give %s (the file was damaged after it was written)", name,
             want[0], got);
    free_list(want, n);
}

static void check_sums(struct ctx *c, hid_t file, const float *params, const float *rms, int required)
{
    if (c->failed || (!required && H5Lexists(file, STATE_GROUP, H5P_DEFAULT) <= 0))
        return;
    hid_t g = group_open(c, file, STATE_GROUP, STATE_GROUP);
    if (g < 0)
        return;
    check_sum(c, g, "weights_sha256", params, required);
    if (rms)
        check_sum(c, g, "optimizer_sha256", rms, required);
    H5Gclose(g);
}

static void read_state(struct ctx *c, hid_t file, struct keras_train_state *s)
{
    memset(s, 0, sizeof *s);
    if (!c->failed && H5Lexists(file, STATE_GROUP, H5P_DEFAULT) <= 0) {
        fail(c, "no " STATE_GROUP " group: not a checkpoint written by cifar-train");
        return;
    }
    hid_t g = group_open(c, file, STATE_GROUP, STATE_GROUP);
    if (g < 0)
        return;
    int64_t format = 0;
    read_attr_scalar(c, g, "format_version", H5T_INTEGER, H5T_NATIVE_INT64, &format);
    if (!c->failed && format != KERAS_STATE_FORMAT)
        fail(c, STATE_GROUP ": format_version %lld, this program reads %d", (long long)format, KERAS_STATE_FORMAT);
    for (size_t i = 0; i < N_STATE_FIELDS; i++) {
        const enum state_kind k = state_fields[i].kind;
        if (state_fields[i].optional && H5Aexists(g, state_fields[i].name) <= 0)
            continue;
        read_attr_scalar(c, g, state_fields[i].name, k == SK_F64 ? H5T_FLOAT : H5T_INTEGER, state_mem_type(k),
                         (char *)s + state_fields[i].offset);
    }
    size_t n = 0;
    char **gen = read_string_list(c, g, STATE_GROUP, "generator", &n);
    if (!c->failed && n == 1)
        snprintf(s->generator, sizeof s->generator, "%s", gen[0]);
    free_list(gen, n);
    if (!c->failed && (s->epoch < 0 || s->world_size < 1 || s->threads < 1 || s->step < 0 || s->batch < 1 || !isfinite(s->lr) || !isfinite(s->rho) ||
                       !isfinite(s->decay) || !isfinite(s->epsilon)))
        fail(c, STATE_GROUP ": implausible values (epoch %lld, world_size %lld)", (long long)s->epoch,
             (long long)s->world_size);
    H5Gclose(g);
}

int keras_load(const char *path, float *params, float *rms, struct keras_train_state *state, char *err,
               size_t errlen)
{
    struct ctx c = {.file = path, .err = err, .errlen = errlen};
    struct quiet q = hdf5_quiet();
    hid_t file = -1;
    FILE *probe = fopen(path, "rb"); /* to tell "absent" from "not HDF5" */
    if (!probe)
        fail(&c, "cannot open: %s", strerror(errno));
    else
        fclose(probe);
    if (!c.failed) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
        file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
        H5Pclose(fapl);
        if (file < 0)
            fail(&c, "not an HDF5 file, or truncated or corrupt");
    }
    read_model_weights(&c, file, params);
    if (rms)
        read_optimizer_weights(&c, file, rms);
    if (state)
        read_state(&c, file, state);
    check_sums(&c, file, params, rms, state != NULL);
    if (file >= 0)
        H5Fclose(file);
    hdf5_restore(q);
    return c.failed ? -1 : 0;
}
