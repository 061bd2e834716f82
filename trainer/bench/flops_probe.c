/* flops-probe: the machine's measured FP32 peak, the denominator of `make bench`'s "share of peak".
 *   flops-probe [--max-isa avx2] [THREADS...]        (default: 1 2)
 * Each thread runs independent chains of fused multiply-adds on registers only (no memory traffic), so the
 * figure is what the cores' FMA units deliver, at the clock the machine runs them now. The widest
 * instruction set the CPU has is picked at run time (__builtin_cpu_supports): AVX-512F, else AVX2 + FMA,
 * else SSE2 multiply + add; --max-isa avx2 stops below AVX-512 (the peak of the bench's pass with oneDNN held to
 * AVX2, trainer-bench.sh). Trials of TRIAL_SECONDS are repeated and the best kept: on a machine shared
 * with other jobs a slower trial means a core was taken away, not a lower peak.
 * Prints one line per thread count: "peak fp32 threads=T: G GFLOP/s (ISA, ...)". */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TRIALS = 5, MAX_THREADS = 64 };
#define TRIAL_SECONDS 0.25

/* Independent accumulators per thread: Zen 4 and recent Intel cores start 2 FMAs per cycle with a latency
 * of 4 cycles, so 8 chains are the minimum. AVX-512 has 32 vector registers (16 chains fit beside the two
 * constants), AVX2 and SSE2 have 16 (12 chains, so that none is spilled to memory). */
#define CHAINS_WIDE 16
#define CHAINS 12

/* Each kernel runs `iters` rounds of one FMA per chain and returns a value that depends on all of them (so the
 * compiler keeps the work). a = a * m + c with m just below 1 converges to c / (1 - m): no overflow, no
 * denormals. The round is unrolled so that the accumulators live in registers, not in an array in
 * memory. One body for every instruction set: VEC is the register type, SET1 broadcasts a float, STEP is one
 * round's a * m + c and ADD sums two registers. */
#define FMA_KERNEL(NAME, TARGET, VEC, CHAINS_N, SET1, STEP, ADD)                                                  \
    TARGET static float NAME(long iters)                                                                        \
    {                                                                                                           \
        VEC acc[CHAINS_N];                                                                                      \
        const VEC m = SET1(0.9999999f), c = SET1(1e-7f);                                                        \
        for (int i = 0; i < CHAINS_N; i++)                                                                      \
            acc[i] = SET1((float)i);                                                                            \
        for (long n = 0; n < iters; n++)                                                                        \
            _Pragma("GCC unroll 16") for (int i = 0; i < CHAINS_N; i++) acc[i] = STEP(acc[i], m, c);            \
        VEC s = acc[0];                                                                                         \
        for (int i = 1; i < CHAINS_N; i++)                                                                      \
            s = ADD(s, acc[i]);                                                                                 \
        float lane[sizeof(VEC) / sizeof(float)], sum = 0.0f;                                                    \
        memcpy(lane, &s, sizeof lane);                                                                          \
        for (size_t i = 0; i < sizeof lane / sizeof lane[0]; i++)                                               \
            sum += lane[i];                                                                                     \
        return sum;                                                                                             \
    }

/* SSE2 has no FMA: a multiply, then an add. */
static inline __m128 muladd_ps(__m128 a, __m128 m, __m128 c) { return _mm_add_ps(_mm_mul_ps(a, m), c); }

FMA_KERNEL(fma_avx512, __attribute__((target("avx512f"))), __m512, CHAINS_WIDE, _mm512_set1_ps, _mm512_fmadd_ps,
           _mm512_add_ps)
FMA_KERNEL(fma_avx2, __attribute__((target("avx2,fma"))), __m256, CHAINS, _mm256_set1_ps, _mm256_fmadd_ps,
           _mm256_add_ps)
FMA_KERNEL(muladd_sse2, , __m128, CHAINS, _mm_set1_ps, muladd_ps, _mm_add_ps)

struct isa {
    const char *name;
    float (*kernel)(long iters);
    int lanes;  /* FP32 lanes per instruction; each lane does a multiply and an add */
    int chains; /* instructions per round */
};

static struct isa pick_isa(int avx512)
{
    __builtin_cpu_init();
    if (avx512 && __builtin_cpu_supports("avx512f"))
        return (struct isa){"AVX-512F FMA, 512-bit", fma_avx512, 16, CHAINS_WIDE};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return (struct isa){"AVX2 FMA, 256-bit", fma_avx2, 8, CHAINS};
    return (struct isa){"SSE2 mul+add, 128-bit (no FMA on this CPU)", muladd_sse2, 4, CHAINS};
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct worker {
    pthread_t id;
    const struct isa *isa;
    pthread_barrier_t *start;
    long iters;
    volatile float sink;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(w->start);
    w->sink = w->isa->kernel(w->iters);
    return NULL;
}

/* FLOP/s of `threads` threads each running `iters` rounds, from the start barrier to the last join. */
static double trial(const struct isa *isa, int threads, long iters)
{
    struct worker w[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
        w[t] = (struct worker){.isa = isa, .start = &start, .iters = iters};
        if (pthread_create(&w[t].id, NULL, work, &w[t]) != 0) {
            perror("flops-probe: pthread_create");
            exit(1);
        }
    }
    pthread_barrier_wait(&start);
    const double t0 = now();
    for (int t = 0; t < threads; t++)
        pthread_join(w[t].id, NULL);
    const double dt = now() - t0;
    pthread_barrier_destroy(&start);
    return (double)threads * (double)iters * isa->chains * isa->lanes * 2.0 / dt;
}

int main(int argc, char **argv)
{
    const int capped = argc > 2 && strcmp(argv[1], "--max-isa") == 0;
    if (capped && strcmp(argv[2], "avx2") != 0) {
        fprintf(stderr, "flops-probe: --max-isa takes only avx2\n");
        return 2;
    }
    argc -= capped ? 2 : 0, argv += capped ? 2 : 0;
    const struct isa isa = pick_isa(!capped);
    /* Calibrate the rounds of one trial on one thread. */
    long iters = 1 << 16;
    for (;;) {
        const double t0 = now();
        isa.kernel(iters);
        const double dt = now() - t0;
        if (dt > TRIAL_SECONDS / 8) {
            iters = (long)((double)iters * TRIAL_SECONDS / dt);
            break;
        }
        iters *= 2;
    }
    const char *deflt[] = {"1", "2"};
    const int nargs = argc > 1 ? argc - 1 : 2;
    for (int a = 0; a < nargs; a++) {
        const int threads = atoi(argc > 1 ? argv[a + 1] : deflt[a]);
        if (threads < 1 || threads > MAX_THREADS) {
            fprintf(stderr, "flops-probe: threads must be 1..%d\n", MAX_THREADS);
            return 2;
        }
        double best = 0.0;
        for (int i = 0; i < TRIALS; i++) {
            const double f = trial(&isa, threads, iters);
            if (f > best)
                best = f;
        }
        printf("peak fp32 threads=%d: %7.1f GFLOP/s (%s, %d register chains per thread, best of %d trials of "
               "%.2f s)\n",
               threads, best * 1e-9, isa.name, isa.chains, TRIALS, TRIAL_SECONDS);
    }
    return 0;
}
