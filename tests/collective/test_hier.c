/* Ranks over several hosts (tests/collective/test_hosts.sh): which path libcollective chose, and that a
 * float32 allreduce adds in the order the README promises for it, bit for bit, on every rank.
 *
 * Every rank computes every rank's values (test_random_floats, seeded by rank and tensor), so each can
 * work out the expected result itself, in float32, in the promised order:
 *   flat (one rank per host, or COLL_HIERARCHICAL=0):  ((x_0 + x_1) + x_2) + ...
 *   hierarchical:  (h_0 + h_1 + ...), h_i the left-to-right sum of host i's ranks (ranks placed by slot:
 *                  host i holds ranks i*L .. i*L+L-1, L = TEST_PER_HOST)
 * divided by the number of ranks for an average; with float16 compression every value that crosses
 * hosts is rounded to float16 first (each rank's values when flat, each host's sum when hierarchical),
 * and the result after the division. The expected float16 rounding is the compiler's _Float16 cast,
 * not libcollective's converter. Expected: TEST_HOSTS, TEST_PER_HOST, TEST_HIER (0/1), TEST_FP16 (0/1). */
#include "testlib.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, hosts, per_host, hier, fp16;

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

static float round16(float x) { return fp16 ? (float)(_Float16)x : x; }

/* The expected result of element k, given every rank's values xs[r][k]. */
static float expected(float *const *xs, size_t k, int average)
{
    float total = 0;
    if (hier) {
        for (int h = 0; h < hosts; h++) {
            float s = xs[h * per_host][k];
            for (int j = 1; j < per_host; j++)
                s += xs[h * per_host + j][k];
            total = h == 0 ? round16(s) : total + round16(s);
        }
    } else {
        total = round16(xs[0][k]);
        for (int r = 1; r < size; r++)
            total += round16(xs[r][k]);
    }
    return round16(average ? total / (float)size : total);
}

static uint64_t fnv(const void *p, size_t bytes)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ULL;
    return h;
}

/* One tensor of n floats, seed `t`, reduced (in place or not) and compared bit for bit with the order
 * above; every rank's result hash must be rank 0's. Returns how many elements differ from the flat order
 * (where the hierarchy changes the sum). */
static size_t check_tensor(size_t n, unsigned t, int average, int in_place)
{
    float **xs = test_alloc((size_t)size * sizeof *xs);
    for (int r = 0; r < size; r++) {
        xs[r] = test_alloc(n * sizeof(float));
        test_random_floats(xs[r], n, t * 977u + (unsigned)r);
    }
    float *mine = test_alloc(n * sizeof(float)), *out = in_place ? mine : test_alloc(n * sizeof(float));
    memcpy(mine, xs[rank], n * sizeof(float));
    OK(coll_allreduce(mine, out, n, COLL_FLOAT32, average ? COLL_AVERAGE : COLL_SUM));
    size_t differs = 0;
    for (size_t k = 0; k < n; k++) {
        const float want = expected(xs, k, average);
        CHECK(memcmp(&want, &out[k], sizeof want) == 0, "tensor %u (%zu floats, %s, %s) element %zu: %a, expected %a",
              t, n, average ? "average" : "sum", in_place ? "in place" : "out of place", k, (double)out[k],
              (double)want);
        float flat = xs[0][k];
        for (int r = 1; r < size; r++)
            flat += xs[r][k];
        flat = average ? flat / (float)size : flat;
        differs += memcmp(&flat, &out[k], sizeof flat) != 0;
    }
    uint64_t h = fnv(out, n * sizeof(float)), *all = test_alloc((size_t)size * sizeof *all);
    OK(coll_allgather(&h, all, 1, COLL_INT64));
    for (int r = 1; r < size; r++)
        CHECK(all[r] == all[0], "tensor %u: rank %d's result differs from rank 0's", t, r);
    free(all);
    if (!in_place)
        free(out);
    free(mine);
    for (int r = 0; r < size; r++)
        free(xs[r]);
    free(xs);
    return differs;
}

/* Several tensors queued together (fused into one buffer) give what each gives alone. */
static void check_fused(void)
{
    enum { K = 6 };
    const size_t sizes[K] = {1, 17, 1000, 33, 4097, 9};
    float *a[K], *b[K];
    coll_handle hd[K];
    for (int i = 0; i < K; i++) {
        a[i] = test_alloc(sizes[i] * sizeof(float));
        b[i] = test_alloc(sizes[i] * sizeof(float));
        test_random_floats(a[i], sizes[i], 31u * (unsigned)i + (unsigned)rank);
        memcpy(b[i], a[i], sizes[i] * sizeof(float));
        OK(coll_allreduce_async(a[i], a[i], sizes[i], COLL_FLOAT32, COLL_AVERAGE, &hd[i]));
    }
    OK(coll_wait_all());
    for (int i = 0; i < K; i++) {
        OK(coll_allreduce(b[i], b[i], sizes[i], COLL_FLOAT32, COLL_AVERAGE));
        CHECK(memcmp(a[i], b[i], sizes[i] * sizeof(float)) == 0, "fused tensor %d differs from the same alone", i);
        free(a[i]);
        free(b[i]);
    }
}

static void check_broadcast(void)
{
    for (int root = 0; root < size; root++) {
        float v[1001];
        for (int i = 0; i < 1001; i++)
            v[i] = rank == root ? (float)(root * 10000 + i) : -1.0f;
        OK(coll_broadcast(v, 1001, COLL_FLOAT32, root));
        for (int i = 0; i < 1001; i++)
            CHECK(v[i] == (float)(root * 10000 + i), "broadcast from %d: element %d is %g", root, i, (double)v[i]);
    }
}

/* What float16 does to values it cannot hold: beyond its range an infinity, NaN stays NaN, inf - inf NaN;
 * uncompressed the same values stay finite. Rank 0 holds the odd values, the others 1 (or 40000). */
static void check_specials(void)
{
    float v[5] = {1, 1, 1, 1, 40000.0f}; /* 40000 fits float16, the sum of two does not */
    if (rank == 0) {
        v[0] = 70000.0f;    /* above float16's largest, 65504 */
        v[1] = NAN;
        v[2] = INFINITY;
        v[3] = 1e-8f;       /* below half float16's smallest subnormal (2^-24): 0 */
    }
    if (rank == 1)
        v[2] = -INFINITY;
    OK(coll_allreduce(v, v, 5, COLL_FLOAT32, COLL_SUM));
    const float others = (float)(size - 1);
    if (fp16) {
        CHECK(isinf(v[0]) && v[0] > 0, "70000 in float16: %g, expected +inf", (double)v[0]);
        CHECK(isinf(v[4]) && v[4] > 0, "%d x 40000 in float16: %g, expected +inf (the sum overflows)", size,
              (double)v[4]);
        CHECK(v[3] == round16(others), "1e-8 + %g: %g", (double)others, (double)v[3]);
    } else {
        CHECK(v[0] == 70000.0f + others, "70000 + %g: %g", (double)others, (double)v[0]);
        CHECK(v[4] == 40000.0f * (float)size, "%d x 40000: %g", size, (double)v[4]);
    }
    CHECK(isnan(v[1]), "NaN + %g: %g, expected NaN", (double)others, (double)v[1]);
    CHECK(isnan(v[2]), "inf - inf: %g, expected NaN", (double)v[2]);
}

int main(void)
{
    OK(coll_init(NULL));
    rank = coll_rank();
    size = coll_size();
    hosts = env_int("TEST_HOSTS", 1);
    per_host = env_int("TEST_PER_HOST", size / hosts);
    hier = env_int("TEST_HIER", 0);
    fp16 = env_int("TEST_FP16", 0);
    CHECK(hosts * per_host == size, "%d hosts x %d ranks is not %d ranks", hosts, per_host, size);
    CHECK(coll_hosts() == hosts, "coll_hosts() %d, expected %d", coll_hosts(), hosts);
    CHECK(coll_hierarchical() == hier, "coll_hierarchical() %d, expected %d", coll_hierarchical(), hier);
    CHECK(coll_compressed() == fp16, "coll_compressed() %d, expected %d", coll_compressed(), fp16);
    if (rank == 0)
        printf("%d ranks on %d hosts: %s, %s\n", size, hosts, hier ? "hierarchical" : "flat",
               fp16 ? "float16 across hosts" : "float32");
    /* Sizes around the ranks' split and past hier.c's piece (2^19 floats). */
    const size_t sizes[] = {1, 3, 7, 1001, 100003, ((size_t)1 << 19) + 5};
    size_t differs = 0;
    unsigned t = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int average = 0; average < 2; average++)
            for (int in_place = 0; in_place < 2; in_place++)
                differs += check_tensor(sizes[i], t++, average, in_place);
    if (rank == 0)
        printf("%zu elements differ from the flat order's sum\n", differs);
    /* The order is the point: where it is the flat one nothing may differ; with several ranks per host and
     * the hierarchy, float32 sums of these values must show it somewhere (else the test checks nothing). */
    if (!hier && !fp16)
        CHECK(differs == 0, "%zu elements differ from the flat order", differs);
    if (hier && per_host > 1 && !fp16)
        CHECK(differs > 0, "no element differs from the flat order: the test cannot tell the orders apart");
    check_fused();
    check_broadcast();
    check_specials();
    OK(coll_finalize());
    if (rank == 0)
        printf("test_hier: %d ranks passed\n", size);
    return 0;
}
