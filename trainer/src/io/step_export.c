/* step_export: the --dump-steps export (contract in step_export.h). */
#include "io/step_export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/cifar_data.h"
#include "core/kernels.h"

/* The .npy header is padded to a fixed size so that the row count can be rewritten in place at the end. */
enum { NPY_HEADER = 128 };

static int npy_header(struct npy_file *n)
{
    char dict[NPY_HEADER], shape[128];
    int at = snprintf(shape, sizeof shape, "(%zu,", n->rows);
    for (int i = 0; i < n->row_rank; i++)
        at += snprintf(shape + at, sizeof shape - (size_t)at, "%s%zu", i ? ", " : " ", n->row[i]);
    snprintf(shape + at, sizeof shape - (size_t)at, ")");
    const int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", n->descr,
                             shape);
    const int body = NPY_HEADER - 10; /* magic (6), version (2), header length (2) */
    if (len < 0 || len >= body)
        return -1;
    memset(dict + len, ' ', (size_t)(body - len - 1));
    dict[body - 1] = '\n';
    const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(body & 0xff),
                                   (unsigned char)(body >> 8)};
    return fseek(n->f, 0, SEEK_SET) == 0 && fwrite(pre, 1, sizeof pre, n->f) == sizeof pre &&
                   fwrite(dict, 1, (size_t)body, n->f) == (size_t)body
               ? 0
               : -1;
}

static int npy_open(struct npy_file *n, const char *dir, const char *name, const char *descr, size_t elem,
                    int row_rank, const size_t *row)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    *n = (struct npy_file){.descr = descr, .elem = elem, .row_rank = row_rank};
    memcpy(n->row, row, (size_t)row_rank * sizeof *row);
    n->f = fopen(path, "wbx");
    if (!n->f || npy_header(n) != 0) {
        fprintf(stderr, "cifar-train: --dump-dir: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static size_t npy_row_bytes(const struct npy_file *n)
{
    size_t b = n->elem;
    for (int i = 0; i < n->row_rank; i++)
        b *= n->row[i];
    return b;
}

/* One row of the first dimension: `bytes` of data, then zeros up to the row size. */
static int npy_row(struct npy_file *n, const void *data, size_t bytes)
{
    static const char zeros[4096];
    if (fwrite(data, 1, bytes, n->f) != bytes)
        return -1;
    for (size_t pad = npy_row_bytes(n) - bytes, chunk; pad; pad -= chunk) {
        chunk = pad < sizeof zeros ? pad : sizeof zeros;
        if (fwrite(zeros, 1, chunk, n->f) != chunk)
            return -1;
    }
    n->rows++;
    return 0;
}

static int npy_close(struct npy_file *n)
{
    if (!n->f)
        return 0;
    int rc = npy_header(n);
    if (fclose(n->f) != 0)
        rc = -1;
    n->f = NULL;
    return rc;
}

/* A whole array of one dimension, written and closed. */
static int npy_vector(const char *dir, const char *name, const float *v, size_t count)
{
    struct npy_file n;
    if (npy_open(&n, dir, name, "<f4", sizeof(float), 0, NULL) != 0)
        return -1;
    const int rc = fwrite(v, sizeof(float), count, n.f) == count ? 0 : -1;
    n.rows = count;
    return npy_close(&n) == 0 ? rc : -1;
}

static size_t sampled_count(void) { return (MODEL_NPARAMS + STEP_EXPORT_STRIDE - 1) / STEP_EXPORT_STRIDE; }

static int write_meta(const struct step_export *e, double lr, double rho, double epsilon, double decay,
                      uint64_t iterations, uint64_t seed, size_t train_images)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/meta.json", e->dir);
    FILE *f = fopen(path, "wx");
    if (!f)
        return -1;
    fprintf(f, "{\"batch\": %d, \"steps\": %d, \"params\": %zu, \"lr\": %.17g, \"rho\": %.17g, \"epsilon\": %.17g, "
               "\"decay\": %.17g, \"iterations\": %llu, \"seed\": %llu, \"train_images\": %zu, \"stride\": %d, "
               "\"dropout\": [",
            e->batch, e->steps, (size_t)MODEL_NPARAMS, lr, rho, epsilon, decay, (unsigned long long)iterations,
            (unsigned long long)seed, train_images, STEP_EXPORT_STRIDE);
    for (int i = 0, d = 0; i < model_nlayers(); i++) {
        const struct model_layer *L = model_layer(i);
        if (L->kind == MODEL_DROPOUT)
            fprintf(f, "%s{\"layer\": \"%s\", \"rate\": %.17g, \"units\": %d}", d++ ? ", " : "", L->name, L->rate,
                    L->h * L->w * L->c);
    }
    fprintf(f, "]}\n");
    return fclose(f);
}

static const struct model_layer *dropout_layer(int d)
{
    for (int i = 0; i < model_nlayers(); i++)
        if (model_layer(i)->dropout == d)
            return model_layer(i);
    return NULL;
}

int step_export_open(struct step_export *e, const char *dir, int steps, int batch, const float *params,
                     const float *acc, double lr, double rho, double epsilon, double decay, uint64_t iterations,
                     uint64_t seed, size_t train_images)
{
    memset(e, 0, sizeof *e);
    e->steps = steps;
    e->batch = batch;
    if (snprintf(e->dir, sizeof e->dir, "%s", dir) >= (int)sizeof e->dir || mkdir(dir, 0755) != 0) {
        fprintf(stderr, "cifar-train: --dump-dir %s: %s\n", dir,
                errno == EEXIST ? "exists already (an export never mixes with an older one)" : strerror(errno));
        return -1;
    }
    size_t units = 1; /* the widest dropout layer, per image */
    for (int d = 0; d < model_ndropout(); d++) {
        const struct model_layer *L = dropout_layer(d);
        if ((size_t)L->h * L->w * L->c > units)
            units = (size_t)L->h * L->w * L->c;
    }
    const size_t floats = (size_t)batch * CIFAR_IMAGE_BYTES; /* a batch, or the sampled weights */
    e->params = malloc(MODEL_NPARAMS * sizeof(float));
    e->xbuf = malloc((floats > sampled_count() ? floats : sampled_count()) * sizeof(float));
    e->bytes = malloc((size_t)batch * units);
    if (!e->params || !e->xbuf || !e->bytes) {
        fprintf(stderr, "cifar-train: --dump-steps: out of memory\n");
        return -1;
    }
    const size_t B = (size_t)batch, three = 3, img[4] = {B, CIFAR_H, CIFAR_W, CIFAR_C}, aug[2] = {B, three},
                 sampled = sampled_count();
    if (write_meta(e, lr, rho, epsilon, decay, iterations, seed, train_images) != 0 ||
        npy_vector(dir, "init_params", params, MODEL_NPARAMS) != 0 || npy_vector(dir, "init_acc", acc, MODEL_NPARAMS) != 0 ||
        npy_open(&e->step, dir, "step", "<i4", 4, 1, &three) != 0 ||
        npy_open(&e->order, dir, "order", "<i4", 4, 1, &B) != 0 ||
        npy_open(&e->aug, dir, "aug", "<f4", 4, 2, aug) != 0 || npy_open(&e->x, dir, "x", "<f4", 4, 4, img) != 0 ||
        npy_open(&e->labels, dir, "labels", "|u1", 1, 1, &B) != 0 ||
        npy_open(&e->lr_t, dir, "lr_t", "<f4", 4, 0, NULL) != 0 ||
        npy_open(&e->loss, dir, "loss", "<f8", 8, 0, NULL) != 0 ||
        npy_open(&e->sampled, dir, "params_sampled", "<f4", 4, 1, &sampled) != 0 ||
        npy_open(&e->state, dir, "state", "<f4", 4, 2, (const size_t[2]){2, MODEL_NPARAMS}) != 0 ||
        npy_open(&e->state_steps, dir, "state_steps", "<i4", 4, 0, NULL) != 0) {
        fprintf(stderr, "cifar-train: --dump-dir %s: cannot write the export\n", dir);
        return -1;
    }
    for (int d = 0; d < model_ndropout(); d++) {
        const struct model_layer *L = dropout_layer(d);
        const size_t row[2] = {B, (size_t)L->h * L->w * L->c};
        char name[64];
        snprintf(name, sizeof name, "mask_%s", L->name);
        if (npy_open(&e->mask[d], dir, name, "|u1", 1, 2, row) != 0)
            return -1;
    }
    return 0;
}

int step_export_state(struct step_export *e, const struct model *m, int step, int B, const float *acc_device)
{
    if (e->written % STEP_EXPORT_STATE_EVERY > 1 && step != 0 && B == e->batch)
        return 0;
    const int32_t t = e->written;
    model_get_params(m, e->params);
    int rc = npy_row(&e->state_steps, &t, sizeof t);
    if (rc == 0 && fwrite(e->params, sizeof(float), MODEL_NPARAMS, e->state.f) != MODEL_NPARAMS)
        rc = -1;
    m->k->download(e->params, acc_device, MODEL_NPARAMS * sizeof(float));
    if (rc == 0 && fwrite(e->params, sizeof(float), MODEL_NPARAMS, e->state.f) != MODEL_NPARAMS)
        rc = -1;
    e->state.rows++;
    if (rc != 0)
        fprintf(stderr, "cifar-train: --dump-dir %s: write failed: %s\n", e->dir, strerror(errno));
    return rc;
}

int step_export_add(struct step_export *e, const struct model *m, int epoch, int step, int B, const uint32_t *idx,
                    const struct augment_params *aug, uint64_t dropout_key, float lr_t, double loss_sum)
{
    const struct kernels *k = m->k;
    int rc = 0;
    const int32_t st[3] = {epoch, step, B};
    int32_t order[e->batch]; /* padded with -1, not the zeros npy_row pads with */
    float params[B][3];
    for (int i = 0; i < e->batch; i++)
        order[i] = i < B ? (int32_t)idx[i] : -1;
    for (int i = 0; i < B; i++) {
        params[i][0] = aug ? aug[i].shift_rows : 0.0f;
        params[i][1] = aug ? aug[i].shift_cols : 0.0f;
        params[i][2] = aug ? (float)(aug[i].flip != 0) : 0.0f;
    }
    rc |= npy_row(&e->step, st, sizeof st);
    rc |= npy_row(&e->order, order, sizeof order);
    rc |= npy_row(&e->aug, params, sizeof params);
    k->download(e->xbuf, m->x, (size_t)B * CIFAR_IMAGE_BYTES * sizeof(float));
    rc |= npy_row(&e->x, e->xbuf, (size_t)B * CIFAR_IMAGE_BYTES * sizeof(float));
    k->download(e->bytes, m->labels, (size_t)B);
    rc |= npy_row(&e->labels, e->bytes, (size_t)B);
    for (int d = 0; d < model_ndropout(); d++) {
        const struct model_layer *L = dropout_layer(d);
        const size_t units = (size_t)L->h * L->w * L->c, n = (size_t)B * units;
        const uint64_t key = model_dropout_key(dropout_key, d);
        for (size_t i = 0; i < n; i++)
            e->bytes[i] = (uint8_t)dropout_kept(key, i, (float)L->rate);
        rc |= npy_row(&e->mask[d], e->bytes, n);
    }
    rc |= npy_row(&e->lr_t, &lr_t, sizeof lr_t);
    const double loss = loss_sum / B;
    rc |= npy_row(&e->loss, &loss, sizeof loss);
    model_get_params(m, e->params);
    const size_t ns = sampled_count();
    for (size_t i = 0; i < ns; i++)
        e->xbuf[i] = e->params[i * STEP_EXPORT_STRIDE];
    rc |= npy_row(&e->sampled, e->xbuf, ns * sizeof(float));
    if (rc != 0) {
        fprintf(stderr, "cifar-train: --dump-dir %s: write failed: %s\n", e->dir, strerror(errno));
        return -1;
    }
    if (++e->written < e->steps)
        return 0;
    return step_export_close(e) == 0 ? 1 : -1;
}

int step_export_close(struct step_export *e)
{
    int rc = 0;
    struct npy_file *files[] = {&e->step,   &e->order, &e->aug,     &e->x,     &e->labels,
                                &e->lr_t,   &e->loss,  &e->sampled, &e->state, &e->state_steps};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        rc |= npy_close(files[i]);
    for (int d = 0; d < MODEL_MAX_DROPOUT; d++)
        rc |= npy_close(&e->mask[d]);
    free(e->params);
    free(e->xbuf);
    free(e->bytes);
    e->params = e->xbuf = NULL;
    e->bytes = NULL;
    if (rc != 0)
        fprintf(stderr, "cifar-train: --dump-dir %s: write failed\n", e->dir);
    return rc != 0 ? -1 : 0;
}
