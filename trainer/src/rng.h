/* rng: a counter-based random number generator, so that every random number of a training run is a pure
 * function of (seed, epoch, step, rank, stream, index) and nothing needs saving to resume exactly.
 *
 * A stream key is derived by hashing the coordinates; the i-th number of a stream is a hash of (key, i).
 * The hash is the SplitMix64 finaliser (Stafford's variant 13) applied twice with distinct odd constants,
 * which passes BigCrush as a counter-based generator. Any i may be drawn in any order, from any thread. */
#ifndef TRAINER_RNG_H
#define TRAINER_RNG_H

#include <stdint.h>

/* Compiled by nvcc these functions also exist on the device, so CUDA kernels draw exactly the numbers the
 * CPU draws (dropout masks); a C compiler sees plain static inline functions. */
#ifdef __CUDACC__
#define TRAINER_HD __host__ __device__
#else
#define TRAINER_HD
#endif

/* What a stream is used for; part of its key, so streams never overlap. */
enum rng_stream {
    RNG_INIT = 1,    /* initial weights (epoch = step = rank = 0) */
    RNG_SHUFFLE = 2, /* per-epoch sample order (step = 0) */
    RNG_AUGMENT = 3, /* per-batch augmentation */
    RNG_DROPOUT = 4, /* per-batch dropout masks; a layer index is added to the stream */
};

static inline TRAINER_HD uint64_t rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The key of one stream. */
static inline TRAINER_HD uint64_t rng_key(uint64_t seed, uint32_t epoch, uint32_t step, uint32_t rank,
                                          uint32_t stream)
{
    uint64_t k = rng_mix(seed + 0x9e3779b97f4a7c15ULL);
    k = rng_mix(k ^ (((uint64_t)epoch << 32) | step));
    return rng_mix(k ^ (((uint64_t)rank << 32) | stream));
}

/* The i-th 64-bit number of the stream `key`. */
static inline TRAINER_HD uint64_t rng_u64(uint64_t key, uint64_t i)
{
    return rng_mix(rng_mix(key ^ (i * 0xd1342543de82ef95ULL)) + 0x9e3779b97f4a7c15ULL);
}

/* Uniform in [0, 1) with 24 random bits (exactly representable as float). */
static inline TRAINER_HD float rng_uniform(uint64_t key, uint64_t i)
{
    return (float)(rng_u64(key, i) >> 40) * (1.0f / 16777216.0f);
}

/* Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias below 2^-32 for n < 2^32). */
static inline TRAINER_HD uint32_t rng_below(uint64_t key, uint64_t i, uint32_t n)
{
    return (uint32_t)(((rng_u64(key, i) >> 32) * (uint64_t)n) >> 32);
}

#endif
