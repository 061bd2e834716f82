/* Correctness of libcollective on real ranks: run by test_correctness.sh under mpirun -np 1..4 and as a
 * single process without a launcher. Every op and host type, sizes 0, 1, odd, below and far above the
 * fusion threshold (the script sets COLL_FUSION_THRESHOLD small), in-place and out-of-place, broadcast
 * from every root, allgather, barrier, asynchronous progress without waiting, and fusion bit-identical to
 * one-by-one, coll_host_alloc's node-shared path bit-identical to MPI's, the node-shared control block
 * under ragged timing, and allreduce_apply's hand-over. Values are chosen so that exact results are known. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shm.h"   /* coll_shm_find: what the library chose */
#include "world.h" /* coll_world.host_shared */
#include "testlib.h"

static int rank, size;

static const enum coll_dtype host_types[] = {COLL_FLOAT32, COLL_INT32, COLL_INT64, COLL_UINT8};
static const size_t sizes[] = {0, 1, 7, 1001, 100003};

static void put(enum coll_dtype t, void *buf, size_t i, int64_t v)
{
    switch (t) {
    case COLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case COLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case COLL_INT64: ((int64_t *)buf)[i] = v; break;
    case COLL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    default: CHECK(0, "type %d not tested on host", (int)t);
    }
}

/* Element i of the exact result: rank r contributes (r+1)*v with v = i%13+1, so the sum is S*v. */
static int same_as_expected(enum coll_dtype t, const void *buf, size_t i, enum coll_op op)
{
    int64_t s = (int64_t)size * (size + 1) / 2 * (int64_t)(i % 13 + 1);
    switch (t) {
    case COLL_FLOAT32: {
        float want = op == COLL_AVERAGE ? (float)s / (float)size : (float)s;
        return ((const float *)buf)[i] == want;
    }
    case COLL_INT32: return ((const int32_t *)buf)[i] == (int32_t)(op == COLL_AVERAGE ? s / size : s);
    case COLL_INT64: return ((const int64_t *)buf)[i] == (op == COLL_AVERAGE ? s / size : s);
    case COLL_UINT8: return ((const uint8_t *)buf)[i] == (uint8_t)(op == COLL_AVERAGE ? s / size : s);
    default: return 0;
    }
}

static void test_allreduce(void)
{
    for (size_t ti = 0; ti < sizeof host_types / sizeof *host_types; ti++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int op = COLL_SUM; op <= COLL_AVERAGE; op++)
                for (int inplace = 0; inplace <= 1; inplace++) {
                    enum coll_dtype t = host_types[ti];
                    size_t n = sizes[si], es = coll_dtype_size(t);
                    char *send = test_alloc(n * es), *recv = test_alloc(n * es);
                    for (size_t i = 0; i < n; i++)
                        put(t, send, i, (int64_t)(rank + 1) * (int64_t)(i % 13 + 1));
                    memset(recv, 0xab, n * es);
                    char *keep = test_alloc(n * es);
                    memcpy(keep, send, n * es);
                    OK(coll_allreduce(send, inplace ? send : recv, n, t, op));
                    const char *out = inplace ? send : recv;
                    for (size_t i = 0; i < n; i++)
                        CHECK(same_as_expected(t, out, i, op), "allreduce %s type %d count %zu %s: element %zu wrong",
                              op == COLL_SUM ? "sum" : "average", (int)t, n, inplace ? "in-place" : "out-of-place", i);
                    if (!inplace)
                        CHECK(!memcmp(keep, send, n * es), "out-of-place allreduce changed sendbuf");
                    free(send);
                    free(recv);
                    free(keep);
                }
}

static void test_broadcast(void)
{
    for (int root = 0; root < size; root++)
        for (size_t ti = 0; ti < sizeof host_types / sizeof *host_types; ti++)
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
                enum coll_dtype t = host_types[ti];
                size_t n = sizes[si], es = coll_dtype_size(t);
                char *buf = test_alloc(n * es), *want = test_alloc(n * es);
                for (size_t i = 0; i < n; i++)
                    put(t, want, i, (int64_t)((i * 7 + (size_t)root) % 100));
                if (rank == root)
                    memcpy(buf, want, n * es);
                else
                    memset(buf, 0xcd, n * es);
                OK(coll_broadcast(buf, n, t, root));
                CHECK(!memcmp(buf, want, n * es), "broadcast from root %d of %zu x type %d differs", root, n, (int)t);
                free(buf);
                free(want);
            }
}

static void test_allgather(void)
{
    for (size_t si = 0; si < 4; si++)
        for (int inplace = 0; inplace <= 1; inplace++) {
            size_t n = sizes[si];
            int32_t *recv = test_alloc((size_t)size * n * sizeof *recv), *send = test_alloc(n * sizeof *send);
            int32_t *mine = inplace ? recv + (size_t)rank * n : send;
            for (size_t i = 0; i < n; i++)
                mine[i] = rank * 100000 + (int32_t)i;
            OK(coll_allgather(mine, recv, n, COLL_INT32));
            for (int r = 0; r < size; r++)
                for (size_t i = 0; i < n; i++)
                    CHECK(recv[(size_t)r * n + i] == r * 100000 + (int32_t)i, "allgather %zu %s: rank %d element %zu",
                          n, inplace ? "in-place" : "out-of-place", r, i);
            free(recv);
            free(send);
        }
}

/* The model's gradient tensors (the 1179648-float kernel shrunk tenfold to keep the test quick). */
static const size_t grads[] = {864, 32, 9216, 32, 18432, 64, 36864, 64, 117964, 512, 5120, 10};
#define NGRADS (sizeof grads / sizeof *grads)

static void test_fusion_identical(void)
{
    for (int op = COLL_SUM; op <= COLL_AVERAGE; op++) {
        float *in[NGRADS], *alone[NGRADS], *fused[NGRADS], *inplace[NGRADS];
        coll_handle h[NGRADS];
        for (size_t k = 0; k < NGRADS; k++) {
            in[k] = test_alloc(grads[k] * sizeof(float));
            alone[k] = test_alloc(grads[k] * sizeof(float));
            fused[k] = test_alloc(grads[k] * sizeof(float));
            inplace[k] = test_alloc(grads[k] * sizeof(float));
            test_random_floats(in[k], grads[k], (unsigned)(rank * 100 + (int)k));
            memcpy(inplace[k], in[k], grads[k] * sizeof(float));
        }
        for (size_t k = 0; k < NGRADS; k++) /* one by one: every blocking call runs alone */
            OK(coll_allreduce(in[k], alone[k], grads[k], COLL_FLOAT32, op));
        for (size_t k = 0; k < NGRADS; k++) /* queued together: fused up to the threshold */
            OK(coll_allreduce_async(in[k], fused[k], grads[k], COLL_FLOAT32, op, &h[k]));
        OK(coll_wait_all());
        for (size_t k = 0; k < NGRADS; k++)
            OK(coll_allreduce_async(inplace[k], inplace[k], grads[k], COLL_FLOAT32, op, &h[k]));
        for (size_t k = NGRADS; k-- > 0;) /* waited in reverse, as backward finishes layers */
            OK(coll_wait(h[k]));
        for (size_t k = 0; k < NGRADS; k++) {
            CHECK(!memcmp(alone[k], fused[k], grads[k] * sizeof(float)), "fused tensor %zu (%zu floats, %s) differs "
                  "from reducing it alone", k, grads[k], op == COLL_SUM ? "sum" : "average");
            CHECK(!memcmp(alone[k], inplace[k], grads[k] * sizeof(float)), "fused in-place tensor %zu differs", k);
            free(in[k]);
            free(alone[k]);
            free(fused[k]);
            free(inplace[k]);
        }
    }
}

/* The model's gradient tensors laid out in one buffer, as cifar-train's are: off[k] is tensor k's first
 * float, off[NGRADS] the total. The buffer comes from coll_host_alloc (collective). */
static float *host_grads(size_t *off)
{
    off[0] = 0;
    for (size_t k = 0; k < NGRADS; k++)
        off[k + 1] = off[k] + grads[k];
    float *g = coll_host_alloc(off[NGRADS] * sizeof *g);
    CHECK(g, "coll_host_alloc of %zu floats failed: %s", off[NGRADS], coll_last_error());
    return g;
}

/* coll_host_alloc: the model's tensors laid out in one buffer, as cifar-train's gradients are. Every run of
 * this test has its ranks on this host (mpirun here, srun on the local cluster's two slurmd, which share
 * it), so the buffer must be node-shared, unless there is one process, COLL_SHM=0, or the script made it
 * private (TEST_SHM_PRIVATE: a rank's /dev/shm refused, or a different COLL_HOST_ID per rank); its in-place
 * allreduces must equal, bit for bit, the same tensors reduced through MPI from private memory; private, it
 * must be right. The script checks that nothing is left in /dev/shm. */
static void test_host_alloc(void)
{
    size_t off[NGRADS + 1];
    float *g = host_grads(off);
    CHECK(((uintptr_t)g & 4095) == 0, "coll_host_alloc's memory is not page-aligned: %p", (void *)g);
    for (size_t i = 0; i < off[NGRADS]; i++)
        CHECK(g[i] == 0.0f, "coll_host_alloc's memory is not zeroed at %zu", i);
    int64_t id, at;
    const char *shm_env = getenv("COLL_SHM");
    const int want_shared = size > 1 && !(shm_env && !strcmp(shm_env, "0")) && !getenv("TEST_SHM_PRIVATE");
    const int shared = coll_host_shared(g);
    CHECK(shared == want_shared, "coll_host_alloc's buffer is %s, expected %s", shared ? "node-shared" : "private",
          want_shared ? "node-shared" : "private");
    CHECK(coll_host_shared(g + off[NGRADS] - 1) == shared, "coll_host_shared differs at the buffer's last float");
    CHECK((coll_shm_find(g + off[3], grads[3] * sizeof *g, &id, &at) != NULL) == shared,
          "coll_host_shared and the library's own lookup disagree on tensor 3");
    CHECK(!shared || at == (int64_t)(off[3] * sizeof *g), "tensor 3 found at byte %lld, not %zu", (long long)at,
          off[3] * sizeof *g);
    if (rank == 0)
        printf("coll_host_alloc: %s\n", shared ? "node-shared" : "private");
    float *ref = test_alloc(off[NGRADS] * sizeof *ref);
    CHECK(!coll_host_shared(ref) && !coll_host_shared(NULL), "coll_host_shared says malloc's memory is node-shared");
    for (int op = COLL_SUM; op <= COLL_AVERAGE; op++) {
        coll_handle h[NGRADS];
        test_random_floats(g, off[NGRADS], (unsigned)(rank * 7 + op));
        memcpy(ref, g, off[NGRADS] * sizeof *g);
        for (size_t k = 0; k < NGRADS; k++) /* private memory: through MPI */
            OK(coll_allreduce(ref + off[k], ref + off[k], grads[k], COLL_FLOAT32, op));
        for (size_t k = NGRADS; k-- > 0;) /* queued as backward finishes layers, last first */
            OK(coll_allreduce_async(g + off[k], g + off[k], grads[k], COLL_FLOAT32, op, &h[k]));
        OK(coll_wait_all());
        for (size_t k = 0; k < NGRADS; k++)
            CHECK(!memcmp(ref + off[k], g + off[k], grads[k] * sizeof *g),
                  "coll_host_alloc tensor %zu (%zu floats, %s) differs from the MPI path's result", k, grads[k],
                  op == COLL_SUM ? "sum" : "average");
    }
    /* Exact values, and the same buffer reduced again (the ranks' progress marks move on). */
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < off[NGRADS]; i++)
            put(COLL_FLOAT32, g, i, (int64_t)(rank + 1) * (int64_t)(i % 13 + 1));
        OK(coll_allreduce(g + off[9], g + off[9], off[NGRADS] - off[9], COLL_FLOAT32, COLL_AVERAGE));
        for (size_t i = off[9]; i < off[NGRADS]; i++)
            CHECK(g[i] == (float)((size + 1) * (int64_t)(i % 13 + 1)) / 2.0f,
                  "round %d: averaged element %zu is %g", round, i, g[i]);
        CHECK(g[0] == (float)(rank + 1), "an element outside the reduced range changed: %g", g[0]);
    }
    /* Out of place from the shared buffer: the MPI path, still right. */
    OK(coll_allreduce(g, ref, grads[0], COLL_FLOAT32, COLL_SUM));
    for (size_t i = 0; i < grads[0]; i++)
        CHECK(same_as_expected(COLL_FLOAT32, ref, i, COLL_SUM), "out-of-place from coll_host_alloc, element %zu", i);
    OK(coll_host_free(g));
    CHECK(coll_host_free(ref) == COLL_ERR_ARG, "coll_host_free accepted memory it did not allocate");
    free(ref);
}

/* coll_allreduce_apply_async's function here: it copies what it is handed into each named rank's copy of
 * `out` and counts the hand-over in that rank's `hits`, both laid out like the reduced buffer g. */
struct apply_check {
    const float *g;
    float *out, *hits;
    int first_rank, nranks; /* what every call must say */
    int wrong;              /* calls that said otherwise, or named a rank whose copy is out of reach */
};

static void apply_record(void *vctx, float *at, size_t n, const float *reduced, int first_rank, int nranks)
{
    struct apply_check *c = vctx;
    const size_t i = (size_t)(at - c->g);
    c->wrong += first_rank != c->first_rank || nranks != c->nranks;
    for (int r = first_rank; r < first_rank + nranks; r++) {
        float *out = coll_host_peer(c->out, r), *hits = coll_host_peer(c->hits, r);
        if (!out || !hits) {
            c->wrong++;
            continue;
        }
        memcpy(out + i, reduced, n * sizeof *out);
        for (size_t k = 0; k < n; k++)
            hits[i + k] += 1.0f;
    }
}

/* coll_allreduce_apply_async, queued as cifar-train queues its gradients (last tensor first, the votes'
 * plain allreduce after them in the same buffer): on every rank, after coll_wait_all, its copy of `out`
 * must hold coll_allreduce's results bit for bit, and its `hits` must be 1 everywhere. That is, every
 * (element, rank) pair was handed over exactly once, and the collective completed only after every rank's
 * calls had returned: in node-shared memory each rank gets its slices for all ranks, otherwise the whole
 * buffer for itself. Private memory (TEST_SHM_PRIVATE, COLL_SHM=0, one process) reduces through MPI,
 * fused with the plain allreduce under the script's COLL_FUSION_THRESHOLD. */
static void test_apply(void)
{
    size_t off[NGRADS + 1];
    float *g = host_grads(off), *out = host_grads(off), *hits = host_grads(off);
    const size_t total = off[NGRADS], votes = grads[NGRADS - 1];
    const int shared = coll_host_shared(g);
    CHECK(coll_host_shared(out) == shared && coll_host_shared(hits) == shared, "coll_host_alloc mixed kinds");
    CHECK(coll_host_peer(g, rank) == g && coll_host_peer(g + 5, rank) == g + 5, "coll_host_peer of this rank");
    CHECK(!coll_host_peer(g, size) && !coll_host_peer(g, -1), "coll_host_peer of a rank that is not one");
    for (int r = 0; r < size; r++)
        CHECK((coll_host_peer(g + 7, r) != NULL) == (shared || r == rank), "coll_host_peer(g + 7, %d) is %p", r,
              coll_host_peer(g + 7, r));
    struct apply_check c = {g, out, hits, shared ? 0 : rank, shared ? size : 1, 0};
    float *ref = test_alloc(total * sizeof *ref);
    for (int round = 0; round < 4; round++) {
        const enum coll_op op = round % 2 ? COLL_SUM : COLL_AVERAGE;
        test_random_floats(g, total, (unsigned)(rank * 31 + round));
        memcpy(ref, g, total * sizeof *g);
        memset(out, 0, total * sizeof *out); /* this rank's copies: the peers write them only once this rank */
        memset(hits, 0, total * sizeof *hits); /* has queued, after this */
        for (size_t k = 0; k < NGRADS; k++)
            OK(coll_allreduce(ref + off[k], ref + off[k], grads[k], COLL_FLOAT32, op));
        coll_handle h;
        for (size_t k = NGRADS - 1; k-- > 0;)
            OK(coll_allreduce_apply_async(g + off[k], grads[k], op, apply_record, &c, &h));
        OK(coll_allreduce_async(g + off[NGRADS - 1], g + off[NGRADS - 1], votes, COLL_FLOAT32, op, &h));
        OK(coll_wait_all());
        CHECK(!c.wrong, "round %d: %d hand-overs named ranks other than %d + %d, or a copy out of reach", round,
              c.wrong, c.first_rank, c.nranks);
        for (size_t i = 0; i < off[NGRADS - 1]; i++) {
            CHECK(hits[i] == 1.0f, "round %d: element %zu was handed over %g times for rank %d", round, i, hits[i],
                  rank);
            CHECK(!memcmp(&out[i], &ref[i], sizeof *out), "round %d: element %zu handed over as %.9g, not %.9g",
                  round, i, out[i], ref[i]);
        }
        CHECK(!memcmp(g + off[NGRADS - 1], ref + off[NGRADS - 1], votes * sizeof *g),
              "round %d: the plain allreduce after the applied ones is wrong", round);
        CHECK(hits[total - 1] == 0.0f, "round %d: the plain allreduce was handed over", round);
    }
    if (rank == 0)
        printf("allreduce_apply: %zu tensors, 4 rounds, %s memory: each element handed over once per rank, "
               "bit-identical\n", NGRADS - 1, shared ? "node-shared" : "private");
    free(ref);
    OK(coll_host_free(g));
    OK(coll_host_free(out));
    OK(coll_host_free(hits));
}

/* The ranks of one host coordinate through the control block (hostctl.c) unless there is one process,
 * COLL_SHM=0, or the script made them differ (TEST_CTL_PRIVATE: a different COLL_HOST_ID per rank, or a
 * rank without /dev/shm). */
static void test_control_block(void)
{
    const char *shm_env = getenv("COLL_SHM");
    const int want = size > 1 && !(shm_env && !strcmp(shm_env, "0")) && !getenv("TEST_CTL_PRIVATE");
    CHECK(coll_world.host_shared == want, "the ranks coordinate through %s, expected %s",
          coll_world.host_shared ? "the node-shared control block" : "MPI messages",
          want ? "the node-shared control block" : "MPI messages");
    if (rank == 0)
        printf("coordination: %s\n", coll_world.host_shared ? "node-shared control block" : "MPI messages");
}

/* Gradients as a training step queues them, with ragged timing: each rank sleeps its own pseudo-random
 * 0-400 us between tensors, so that the ranks announce different batches, grant at different moments and
 * receive the granted ones in different pieces. In node-shared memory (g from coll_host_alloc) a lost
 * wake-up between the ranks' processes hangs this (the script's COLL_STALL_ABORT_SEC then ends it with a
 * stall message); in private memory the fused MPI allreduces must still be the same on every rank, or
 * MPI fails or the values are wrong. Values are exact. */
static void ragged_steps(float *g, const size_t *off, const char *memory)
{
    unsigned seed = 12345u + 977u * (unsigned)rank;
    for (int round = 0; round < 100; round++) {
        for (size_t i = 0; i < off[NGRADS]; i++)
            put(COLL_FLOAT32, g, i, (int64_t)(rank + 1) * (int64_t)(i % 13 + 1));
        coll_handle h[NGRADS];
        for (size_t k = NGRADS; k-- > 0;) {
            seed = seed * 1103515245u + 12345u;
            struct timespec nap = {0, (long)((seed >> 8) % 400) * 1000};
            nanosleep(&nap, NULL);
            OK(coll_allreduce_async(g + off[k], g + off[k], grads[k], COLL_FLOAT32, COLL_SUM, &h[k]));
        }
        if (round % 3 == 0) /* sometimes one tensor at a time, newest first */
            for (size_t k = 0; k < NGRADS; k++)
                OK(coll_wait(h[k]));
        else
            OK(coll_wait_all());
        for (size_t i = 0; i < off[NGRADS]; i++)
            CHECK(same_as_expected(COLL_FLOAT32, g, i, COLL_SUM), "ragged round %d (%s): element %zu is %g", round,
                  memory, i, g[i]);
    }
    if (rank == 0)
        printf("ragged: 100 steps of %zu tensors, ranks 0-400 us apart, %s memory: exact\n", NGRADS, memory);
}

static void test_ragged(void)
{
    size_t off[NGRADS + 1];
    float *g = host_grads(off);
    ragged_steps(g, off, coll_host_shared(g) ? "node-shared" : "coll_host_alloc's private");
    OK(coll_host_free(g));
    g = test_alloc(off[NGRADS] * sizeof *g);
    ragged_steps(g, off, "private");
    free(g);
}

/* More requests queued before a wait than the control block's log holds (1024 per rank, hostctl.c): they
 * are announced as room frees, in order, with the right values. */
static void test_many_queued(void)
{
    enum { N = 3000 };
    int32_t *v = test_alloc(N * sizeof *v);
    coll_handle *h = test_alloc(N * sizeof *h);
    for (int i = 0; i < N; i++) {
        v[i] = (rank + 1) * (i % 13 + 1);
        OK(coll_allreduce_async(&v[i], &v[i], 1, COLL_INT32, COLL_SUM, &h[i]));
    }
    OK(coll_wait_all());
    for (int i = 0; i < N; i++)
        CHECK(same_as_expected(COLL_INT32, v, (size_t)i, COLL_SUM), "request %d of %d queued: %d", i, N, v[i]);
    free(v);
    free(h);
}

/* Queued collectives of different kinds complete in order with the right values. */
static void test_async_mixed(void)
{
    size_t n = 5003;
    float *a = test_alloc(n * sizeof *a), *b = test_alloc(n * sizeof *b);
    int64_t *c = test_alloc(n * sizeof *c);
    for (size_t i = 0; i < n; i++) {
        put(COLL_FLOAT32, a, i, (int64_t)(rank + 1) * (int64_t)(i % 13 + 1));
        b[i] = rank == size - 1 ? (float)i : -1.0f;
        put(COLL_INT64, c, i, (int64_t)(rank + 1) * (int64_t)(i % 13 + 1));
    }
    coll_handle ha, hb, hc;
    OK(coll_allreduce_async(a, a, n, COLL_FLOAT32, COLL_SUM, &ha));
    OK(coll_broadcast_async(b, n, COLL_FLOAT32, size - 1, &hb));
    OK(coll_allreduce_async(c, c, n, COLL_INT64, COLL_AVERAGE, &hc));
    OK(coll_wait(hc));
    OK(coll_wait(ha));
    OK(coll_wait(hb));
    for (size_t i = 0; i < n; i++) {
        CHECK(same_as_expected(COLL_FLOAT32, a, i, COLL_SUM), "mixed async: allreduce element %zu", i);
        CHECK(b[i] == (float)i, "mixed async: broadcast element %zu", i);
        CHECK(same_as_expected(COLL_INT64, c, i, COLL_AVERAGE), "mixed async: int64 average element %zu", i);
    }
    free(a);
    free(b);
    free(c);
}

/* The reduction progresses in the background while this thread computes and never waits. */
static void test_overlap(void)
{
    size_t n = (size_t)1 << 20, rounds = 0;
    float *g = test_alloc(n * sizeof *g), *work = test_alloc(4096 * sizeof *work);
    for (size_t i = 0; i < n; i++)
        put(COLL_FLOAT32, g, i, (int64_t)(rank + 1) * (int64_t)(i % 13 + 1));
    coll_handle h;
    int done = 0;
    time_t start = time(NULL);
    OK(coll_allreduce_async(g, g, n, COLL_FLOAT32, COLL_AVERAGE, &h));
    while (!done) {
        for (size_t i = 0; i < 4096; i++) /* "backward" of the next layer */
            work[i] = work[i] * 0.5f + (float)i;
        rounds++;
        OK(coll_test(h, &done));
        CHECK(done || time(NULL) - start < 120, "async allreduce made no progress in 120 s without a wait");
    }
    OK(coll_wait(h));
    for (size_t i = 0; i < n; i++)
        CHECK(same_as_expected(COLL_FLOAT32, g, i, COLL_AVERAGE), "overlapped allreduce element %zu", i);
    if (rank == 0)
        printf("overlap: a 4 MiB allreduce completed in the background after %zu compute rounds\n", rounds);
    free(g);
    free(work);
}

static void test_refusals(void)
{
    uint16_t h[4] = {0};
    float f[4] = {0};
    CHECK(coll_allreduce(h, h, 4, COLL_FLOAT16, COLL_SUM) == COLL_ERR_UNSUPPORTED, "float16 on host accepted");
    CHECK(strstr(coll_last_error(), "float16"), "float16 refusal does not say why: %s", coll_last_error());
    CHECK(coll_allreduce(NULL, f, 4, COLL_FLOAT32, COLL_SUM) == COLL_ERR_ARG, "NULL sendbuf accepted");
    CHECK(coll_allreduce(f, f, 4, COLL_FLOAT32, (enum coll_op)7) == COLL_ERR_ARG, "unknown op accepted");
    CHECK(coll_broadcast(f, 4, COLL_FLOAT32, size) == COLL_ERR_ARG, "root out of range accepted");
    CHECK(coll_allreduce_async(f, f, 4, COLL_FLOAT32, COLL_SUM, NULL) == COLL_ERR_ARG, "NULL handle accepted");
    coll_handle handle;
    CHECK(coll_allreduce_apply_async(f, 4, COLL_SUM, NULL, NULL, &handle) == COLL_ERR_ARG,
          "allreduce_apply without a function accepted");
    CHECK(coll_wait(NULL) == COLL_ERR_ARG, "wait(NULL) accepted");
}

int main(void)
{
    float x = 1;
    CHECK(coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM) == COLL_ERR_STATE, "allreduce before init accepted");
    OK(coll_init(NULL));
    rank = coll_rank();
    size = coll_size();
    const char *world = getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE") : getenv("SLURM_STEP_NUM_TASKS");
    CHECK(size == (world ? atoi(world) : 1), "size %d, launcher says %s", size, world ? world : "(no launcher)");
    CHECK(rank >= 0 && rank < size, "rank %d of %d", rank, size);
    int lr = coll_local_rank(), ls = coll_local_size();
    CHECK(lr >= 0 && lr < ls && ls <= size, "local rank %d of %d", lr, ls);
    const int hosts = getenv("TEST_HOSTS") ? atoi(getenv("TEST_HOSTS")) : 1; /* mpirun-hosts.sh: by slot */
    if (getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) /* mpirun starts size / hosts ranks on each host */
        CHECK(ls == size / hosts && lr == rank % ls, "under mpirun on %d host(s): local rank %d of %d", hosts, lr,
              ls);
    else if (getenv("SLURM_LOCALID"))
        CHECK(lr == atoi(getenv("SLURM_LOCALID")), "under srun: local rank %d, SLURM_LOCALID %s", lr,
              getenv("SLURM_LOCALID"));
    if (rank == 0)
        printf("rank 0 of %d, local rank %d of %d\n", size, lr, ls);
    CHECK(coll_device() == -1, "a device without asking for one");

    test_refusals();
    test_allreduce();
    test_broadcast();
    test_allgather();
    OK(coll_barrier());
    test_fusion_identical();
    test_async_mixed();
    test_many_queued();
    test_overlap();
    test_control_block();
    test_host_alloc();
    test_ragged();
    test_apply();
    OK(coll_barrier());
    OK(coll_finalize());
    CHECK(coll_barrier() == COLL_ERR_STATE, "barrier after finalize accepted");
    if (rank == 0)
        printf("test_collective: %d rank%s passed\n", size, size == 1 ? "" : "s");
    return 0;
}
