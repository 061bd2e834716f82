/* coll-bench: libcollective's allreduce in the nccl-tests table format, with plain MPI_Allreduce measured
 * on the same run, in the same process, on the same buffers, for comparison.
 *
 *   coll-bench --mem device                              8 B .. 64 MiB doubling (all_reduce_perf's sweep)
 *   mpirun -np 2 coll-bench -b 4M -e 64M -f 2            host memory over MPI
 *   mpirun -np 2 coll-bench --fused 10 -b 4M -e 4M       10 tensors per call, fused by the library
 *   mpirun -np 2 coll-bench --fused-sizes 864,32,...     one row: these tensors vs one MPI_Allreduce
 *   mpirun -np 2 coll-bench --mem device                 GPU buffers over NCCL (one GPU per rank)
 *   mpirun -np 2 coll-bench --mem shared                 buffers from coll_host_alloc: in place, ranks of
 *                                                        one host reduce them in shared memory (the header
 *                                                        says whether they got it or the private fallback)
 *
 * Columns as nccl-tests: time (us) is the mean per iteration of the slowest rank (best of --rounds R
 * interleaved rounds, default 3), algbw = bytes / time,
 * busbw = algbw * 2(n-1)/n. The extra columns time one MPI_Allreduce of the same total bytes (host memory
 * only; MPI here is not CUDA-aware) and give coll time / MPI time: 1.00 means the library costs nothing
 * over MPI, and with --fused it is the price of K tensors versus one buffer of their total size. */
#include <errno.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collective.h"

#ifdef COLL_BENCH_CUDA
#include <cuda_runtime.h>
#endif

#define MAX_TENSORS 4096

struct opts {
    size_t min_bytes, max_bytes;
    double factor;
    int iters, warmup, check, device, shared, rounds;
    enum coll_op op;
    enum coll_dtype type;
    size_t fused;                     /* tensors per call (equal split) */
    size_t sizes[MAX_TENSORS], nsizes; /* --fused-sizes: explicit element counts */
};

static int rank, size, have_mpi;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "coll-bench: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    exit(2);
}

static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    switch (*end) {
    case 'K': case 'k': x *= 1024; end++; break;
    case 'M': case 'm': x *= 1024 * 1024; end++; break;
    case 'G': case 'g': x *= 1024.0 * 1024 * 1024; end++; break;
    }
    if (end == s || *end || errno || x < 0)
        die("'%s' is not a size (bytes, with K/M/G)", s);
    return (size_t)x;
}

/* --help: every option on stdout, exit 0 (manual page: libcollective/coll-bench.1). */
static void usage(void)
{
    if (rank == 0)
        fputs("usage: coll-bench [options]    libcollective's allreduce in the nccl-tests table, beside MPI_Allreduce\n"
              "Run one process per rank under mpirun or srun --mpi=pmix; a single process needs no launcher.\n"
              "  -b SIZE                 smallest message in bytes, suffix K/M/G allowed (default 4M)\n"
              "  -e SIZE                 largest message (default 64M)\n"
              "  -f FACTOR               size ratio of one row to the next (default 2)\n"
              "  -n ITERS                timed iterations per row (default 20)\n"
              "  -w WARMUP               untimed iterations before them (default 5)\n"
              "  -o sum|avg              reduction (default sum)\n"
              "  -d float|int32|int64|uint8|half|bfloat16\n"
              "                          element type (default float; half and bfloat16 need --mem device)\n"
              "  -c 0|1                  count elements that differ from the exact result (default 1)\n"
              "  --fused K               split each message into K tensors, fused by the library (default 1)\n"
              "  --fused-sizes N1,N2,... one row: tensors of these element counts, against one MPI_Allreduce\n"
              "                          of their total\n"
              "  --mem host|device|shared\n"
              "                          buffers in host memory (MPI), on the GPU (NCCL), or from coll_host_alloc\n"
              "                          (in place: shared memory between the ranks of one host) (default host)\n"
              "  --rounds R              interleaved rounds per row, the best kept (default 3)\n"
              "  -h, --help              this text\n",
              stdout);
    exit(0);
}

static void parse(int argc, char **argv, struct opts *o)
{
    /* nccl-tests' usual sweep (all_reduce_perf -b 8 -e 64M -f 2), so rows line up with its output. */
    *o = (struct opts){.min_bytes = 8, .max_bytes = 64 << 20, .factor = 2, .iters = 20, .warmup = 5,
                       .check = 1, .op = COLL_SUM, .type = COLL_FLOAT32, .fused = 1, .rounds = 3};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            usage();
        if (!v)
            die("option %s needs a value", a);
        i++;
        if (!strcmp(a, "-b")) o->min_bytes = parse_size(v);
        else if (!strcmp(a, "-e")) o->max_bytes = parse_size(v);
        else if (!strcmp(a, "-f")) o->factor = atof(v);
        else if (!strcmp(a, "-n")) o->iters = atoi(v);
        else if (!strcmp(a, "-w")) o->warmup = atoi(v);
        else if (!strcmp(a, "-c")) o->check = atoi(v);
        else if (!strcmp(a, "--rounds")) o->rounds = atoi(v);
        else if (!strcmp(a, "--fused")) o->fused = (size_t)atol(v);
        else if (!strcmp(a, "--mem")) {
            if (strcmp(v, "host") && strcmp(v, "device") && strcmp(v, "shared"))
                die("--mem %s: expected host, device or shared", v);
            o->device = !strcmp(v, "device");
            o->shared = !strcmp(v, "shared");
        } else if (!strcmp(a, "-o")) {
            if (!strcmp(v, "sum")) o->op = COLL_SUM;
            else if (!strcmp(v, "avg")) o->op = COLL_AVERAGE;
            else die("-o %s: libcollective reduces with sum or avg", v);
        } else if (!strcmp(a, "-d")) {
            static const char *const names[] = {"float", "half", "bfloat16", "int32", "int64", "uint8"};
            size_t t = 0;
            while (t < 6 && strcmp(v, names[t]))
                t++;
            if (t == 6)
                die("-d %s: expected float, half, bfloat16, int32, int64 or uint8", v);
            o->type = (enum coll_dtype)t;
        } else if (!strcmp(a, "--fused-sizes")) {
            for (const char *p = v; *p;) {
                char *end;
                long n = strtol(p, &end, 10);
                if (end == p || n < 0 || o->nsizes == MAX_TENSORS || (*end && *end != ','))
                    die("--fused-sizes %s: expected element counts separated by commas", v);
                o->sizes[o->nsizes++] = (size_t)n;
                p = *end ? end + 1 : end;
            }
        } else {
            die("unknown option %s", a);
        }
    }
    if (o->iters < 1 || o->rounds < 1 || o->warmup < 0 || o->factor <= 1 || o->fused < 1 || o->fused > MAX_TENSORS ||
        o->min_bytes > o->max_bytes)
        die("bad values: need -n >= 1, --rounds >= 1, -w >= 0, -f > 1, 1 <= --fused <= 4096, -b <= -e");
}

static const char *type_name(enum coll_dtype t)
{
    static const char *const names[] = {"float", "half", "bfloat16", "int32", "int64", "uint8"};
    return names[t];
}

/* Exact small integers in every type: rank r holds 2(r+1)v with v = i%13+1, so the sum is n(n+1)v and the
 * average (n+1)v, both exact whatever the type and summation order. */
static uint16_t half_of(int v) /* small non-negative integers only, exactly */
{
    if (v == 0)
        return 0;
    int e = 0;
    while ((1 << (e + 1)) <= v)
        e++;
    return (uint16_t)(((e + 15) << 10) | (((v << 10) >> e) & 0x3ff));
}

static void set_value(enum coll_dtype t, void *buf, size_t i, int v)
{
    float f = (float)v;
    uint32_t bits;
    switch (t) {
    case COLL_FLOAT32: ((float *)buf)[i] = f; break;
    case COLL_FLOAT16: ((uint16_t *)buf)[i] = half_of(v); break;
    case COLL_BFLOAT16: memcpy(&bits, &f, 4); ((uint16_t *)buf)[i] = (uint16_t)(bits >> 16); break;
    case COLL_INT32: ((int32_t *)buf)[i] = v; break;
    case COLL_INT64: ((int64_t *)buf)[i] = v; break;
    case COLL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    }
}

static void fill(enum coll_dtype t, void *buf, size_t n, int contributor)
{
    for (size_t i = 0; i < n; i++)
        set_value(t, buf, i, 2 * (contributor + 1) * (int)(i % 13 + 1));
}

/* Elements [first, first + n) of buf (of type t) that differ from the reduced value. */
static int64_t wrong(enum coll_dtype t, const void *buf, size_t first, size_t n, enum coll_op op)
{
    size_t es = coll_dtype_size(t);
    char want[8];
    int64_t bad = 0, factor = op == COLL_AVERAGE ? size + 1 : (int64_t)size * (size + 1);
    for (size_t i = first; i < first + n; i++) {
        set_value(t, want, 0, (int)(factor * (int64_t)(i % 13 + 1)));
        bad += memcmp(want, (const char *)buf + i * es, es) != 0;
    }
    return bad;
}

/* Buffers on the chosen memory, filled from host copies. With --mem shared every rank allocates alike (the
 * call is collective). */
static void *buf_alloc(const struct opts *o, size_t bytes)
{
    void *p = NULL;
    if (o->shared) {
        if (!(p = coll_host_alloc(bytes ? bytes : 1)))
            die("coll_host_alloc: %s", coll_last_error());
        return p;
    }
#ifdef COLL_BENCH_CUDA
    if (o->device) {
        if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess)
            die("%s", "cudaMalloc failed");
        return p;
    }
#endif
    (void)o;
    p = malloc(bytes ? bytes : 1);
    if (!p)
        die("%s", "out of memory");
    return p;
}

static void buf_free(const struct opts *o, void *p)
{
    if (o->shared) {
        coll_host_free(p);
        return;
    }
#ifdef COLL_BENCH_CUDA
    if (o->device) {
        cudaFree(p);
        return;
    }
#endif
    (void)o;
    free(p);
}

static void to_buf(const struct opts *o, void *dst, const void *src, size_t bytes)
{
#ifdef COLL_BENCH_CUDA
    if (o->device) {
        cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
        return;
    }
#endif
    (void)o;
    memcpy(dst, src, bytes);
}

static void from_buf(const struct opts *o, void *dst, const void *src, size_t bytes)
{
#ifdef COLL_BENCH_CUDA
    if (o->device) {
        cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
        return;
    }
#endif
    (void)o;
    memcpy(dst, src, bytes);
}

struct tensors {
    size_t k, count[MAX_TENSORS], total;
    char *send, *recv; /* one allocation each; tensor j at offset off[j] elements */
    size_t off[MAX_TENSORS];
};

static void call(const struct opts *o, struct tensors *t, int inplace)
{
    size_t es = coll_dtype_size(o->type);
    coll_handle h;
    for (size_t j = 0; j < t->k; j++) {
        void *r = t->recv + t->off[j] * es;
        const void *s = inplace ? r : t->send + t->off[j] * es;
        int rc = t->k == 1 ? coll_allreduce(s, r, t->count[j], o->type, o->op)
                           : coll_allreduce_async(s, r, t->count[j], o->type, o->op, &h);
        if (rc)
            die("allreduce failed: %s", coll_last_error());
    }
    if (t->k > 1 && coll_wait_all())
        die("allreduce failed: %s", coll_last_error());
}

static double slowest(double sec)
{
    double m = sec;
    if (have_mpi)
        MPI_Allreduce(&sec, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* Mean seconds per call over o->iters after o->warmup, on the slowest rank. */
static double time_coll(const struct opts *o, struct tensors *t, int inplace)
{
    for (int i = 0; i < o->warmup; i++)
        call(o, t, inplace);
    coll_barrier();
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < o->iters; i++)
        call(o, t, inplace);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return slowest(((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9) / o->iters);
}

static MPI_Datatype mpi_type(enum coll_dtype t)
{
    return t == COLL_FLOAT32 ? MPI_FLOAT : t == COLL_INT32 ? MPI_INT32_T : t == COLL_INT64 ? MPI_INT64_T : MPI_UINT8_T;
}

/* Plain MPI_Allreduce of the same total, out-of-place, timed the same way; 0 when not measurable. */
static double time_mpi(const struct opts *o, struct tensors *t)
{
    if (!have_mpi || o->device || o->type == COLL_FLOAT16 || o->type == COLL_BFLOAT16)
        return 0;
    for (int i = 0; i < o->warmup; i++)
        MPI_Allreduce(t->send, t->recv, (int)t->total, mpi_type(o->type), MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < o->iters; i++)
        MPI_Allreduce(t->send, t->recv, (int)t->total, mpi_type(o->type), MPI_SUM, MPI_COMM_WORLD);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return slowest(((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9) / o->iters);
}

/* One validation call from fresh data; returns wrong elements summed over ranks. */
static int64_t validate(const struct opts *o, struct tensors *t, int inplace)
{
    size_t es = coll_dtype_size(o->type), bytes = t->total * es;
    char *host = malloc(bytes ? bytes : 1);
    if (!host)
        die("%s", "out of memory");
    fill(o->type, host, t->total, rank);
    to_buf(o, inplace ? t->recv : t->send, host, bytes);
    call(o, t, inplace);
    from_buf(o, host, t->recv, bytes);
    int64_t bad = 0;
    for (size_t j = 0; j < t->k; j++)
        bad += wrong(o->type, host, t->off[j], t->count[j], o->op);
    free(host);
    if (coll_allreduce(&bad, &bad, 1, COLL_INT64, COLL_SUM))
        die("allreduce of the error count failed: %s", coll_last_error());
    return bad;
}

static void row(const struct opts *o, struct tensors *t, double *busbw_sum, int *rows, int64_t *errors)
{
    size_t es = coll_dtype_size(o->type), bytes = t->total * es;
    t->send = buf_alloc(o, bytes);
    t->recv = buf_alloc(o, bytes);
    int64_t bad_out = o->check ? validate(o, t, 0) : -1, bad_in = o->check ? validate(o, t, 1) : -1;
    /* Rounds interleave the three measurements, and each keeps its best round, so that load from
     * elsewhere on the machine does not favour whichever happened to run in a quiet moment. */
    double out = 0, in = 0, mpi = 0;
    for (int r = 0; r < o->rounds; r++) {
        double a = time_coll(o, t, 0), b = time_coll(o, t, 1), c = time_mpi(o, t);
        out = r == 0 || a < out ? a : out;
        in = r == 0 || b < in ? b : in;
        mpi = r == 0 || c < mpi ? c : mpi;
    }
    double bus = size > 1 ? 2.0 * (size - 1) / size : 1.0;
    double alg_out = (double)bytes / out / 1e9, alg_in = (double)bytes / in / 1e9;
    if (rank == 0) {
        char c_out[16] = "N/A", c_in[16] = "N/A";
        if (o->check) {
            snprintf(c_out, sizeof c_out, "%lld", (long long)bad_out);
            snprintf(c_in, sizeof c_in, "%lld", (long long)bad_in);
        }
        printf("%12zu  %12zu  %8s  %6s  %6d  %7.1f  %6.2f  %6.2f  %6s  %7.1f  %6.2f  %6.2f  %6s", bytes, t->total,
               type_name(o->type), o->op == COLL_SUM ? "sum" : "avg", -1, out * 1e6, alg_out, alg_out * bus,
               c_out, in * 1e6, alg_in, alg_in * bus, c_in);
        if (mpi > 0)
            printf("  %7.1f  %6.2f  %8.3f\n", mpi * 1e6, (double)bytes / mpi / 1e9 * bus, out / mpi);
        else
            printf("  %7s  %6s  %8s\n", "-", "-", "-");
        fflush(stdout);
    }
    *busbw_sum += alg_out * bus;
    (*rows)++;
    *errors += (bad_out > 0 ? bad_out : 0) + (bad_in > 0 ? bad_in : 0);
    buf_free(o, t->send);
    buf_free(o, t->recv);
}

static void split(struct tensors *t, size_t total, size_t k)
{
    t->k = k;
    t->total = 0;
    for (size_t j = 0; j < k; j++) {
        t->count[j] = total * (j + 1) / k - total * j / k;
        t->off[j] = t->total;
        t->total += t->count[j];
    }
}

int main(int argc, char **argv)
{
    struct opts o;
    /* This program calls MPI itself (the reference and the timing), so it initialises MPI with
     * MPI_THREAD_MULTIPLE before coll_init(), as collective.h asks; without a launcher it runs alone. */
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK")) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "coll-bench: MPI does not provide MPI_THREAD_MULTIPLE\n");
            return 1;
        }
        have_mpi = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    parse(argc, argv, &o);
#ifndef COLL_BENCH_CUDA
    if (o.device)
        die("%s", "--mem device: this coll-bench was built without CUDA");
#endif
    struct coll_init_opts init = {.use_device = o.device};
    /* No "skip" here: a benchmark asked for device memory that cannot have it has failed (the tests decide
     * from the machine, not from CUDA, whether a GPU exists: tests/gpu-env.sh). */
    int rc = coll_init(&init);
    if (rc)
        die("coll_init: %s", coll_last_error());
    rank = coll_rank();
    size = coll_size();

    /* --mem shared: whether coll_host_alloc gives the ranks memory they share (one host) or the private
     * fallback, whose in-place columns go over MPI too; asked of a probe allocation (collective, so every
     * rank makes it). A later row's buffer that cannot be shared says so on stderr. */
    const char *memory = o.device ? "device" : "host", *backend = o.device ? "NCCL" : "MPI";
    if (o.shared) {
        void *probe = buf_alloc(&o, 1);
        const int node_shared = coll_host_shared(probe);
        buf_free(&o, probe);
        memory = node_shared ? "shared (coll_host_alloc: node-shared)" : "shared (coll_host_alloc: private fallback)";
        backend = node_shared ? "shared memory in place, MPI out of place" : "MPI";
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    if (rank == 0) {
        printf("# coll-bench (libcollective): nranks %d minBytes %zu maxBytes %zu step: %g(factor) warmup iters: %d "
               "iters: %d rounds: %d fused: %zu validation: %d memory: %s backend: %s threshold: %s\n",
               size, o.min_bytes, o.max_bytes, o.factor, o.warmup, o.iters, o.rounds, o.nsizes ? o.nsizes : o.fused, o.check,
               memory, backend,
               getenv("COLL_FUSION_THRESHOLD") ? getenv("COLL_FUSION_THRESHOLD") : "64M (default)");
        printf("#\n# Using devices\n#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s]\n#\n", rank, (int)getpid(),
               host, coll_device(), o.device ? "cuda" : "host memory");
        printf("# %76s %38s %28s\n", "out-of-place", "in-place", "MPI_Allreduce, same bytes");
        printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s  %7s  %6s  %8s\n", "size", "count",
               "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "time",
               "busbw", "coll/mpi");
        printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s  %7s  %6s  %8s\n", "(B)",
               "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
               "(GB/s)", "(time)");
    }
    static struct tensors t;
    double busbw_sum = 0;
    int rows = 0;
    int64_t errors = 0;
    size_t es = coll_dtype_size(o.type);
    if (o.nsizes) {
        t.k = o.nsizes;
        t.total = 0;
        for (size_t j = 0; j < o.nsizes; j++) {
            t.count[j] = o.sizes[j];
            t.off[j] = t.total;
            t.total += o.sizes[j];
        }
        row(&o, &t, &busbw_sum, &rows, &errors);
    } else {
        for (size_t bytes = o.min_bytes; bytes <= o.max_bytes;) {
            size_t total = bytes / es;
            split(&t, total, total && o.fused > total ? total : o.fused);
            row(&o, &t, &busbw_sum, &rows, &errors);
            size_t next = (size_t)((double)bytes * o.factor);
            if (next <= bytes)
                next = bytes + 1;
            bytes = next;
        }
    }
    if (rank == 0) {
        printf("# Out of bounds values : %lld %s\n", (long long)errors, errors ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g \n#\n", rows ? busbw_sum / rows : 0.0);
    }
    coll_finalize();
    if (have_mpi)
        MPI_Finalize();
    return errors ? 1 : 0;
}
