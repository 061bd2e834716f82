/* libcollective's float16 conversion (half.c) written out for numpy to check (test_half.sh):
 *   test_half DIR  writes DIR/f32.bin (float32 inputs), DIR/f16_vec.bin and DIR/f16_one.bin (their float16
 *                  conversions, all in one call, which takes the F16C path where the CPU has it, and one
 *                  value per call, the compiler's _Float16 path), DIR/back_vec.bin and DIR/back_one.bin
 *                  (every one of the 65536 float16 values converted to float32 the two ways).
 * The inputs: for every sign, exponent and upper 10 mantissa bits of a float32, the lower 13 bits just
 * below, at and above half a float16 unit (ties: the even/odd neighbours), 0 and all ones; then 1M
 * pseudo-random bit patterns (NaNs, infinities and subnormals of both types included). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"

static void write_file(const char *dir, const char *name, const void *p, size_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f) != 0) {
        fprintf(stderr, "test_half: cannot write %s\n", path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2 || !coll_half_available()) {
        fprintf(stderr, argc != 2 ? "usage: test_half DIR\n" : "test_half: this build has no float16\n");
        return 1;
    }
    static const uint32_t low[] = {0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff};
    const size_t nlow = sizeof low / sizeof low[0], nrand = 1u << 20, n = ((size_t)1 << 19) * nlow + nrand;
    uint32_t *bits = malloc(n * sizeof *bits);
    uint16_t *vec = malloc(n * sizeof *vec), *one = malloc(n * sizeof *one), all16[65536];
    float *back_vec = malloc(65536 * sizeof *back_vec), *back_one = malloc(65536 * sizeof *back_one);
    if (!bits || !vec || !one || !back_vec || !back_one)
        return 1;
    size_t k = 0;
    for (uint32_t top = 0; top < (1u << 19); top++)
        for (size_t j = 0; j < nlow; j++)
            bits[k++] = top << 13 | low[j];
    for (uint32_t s = 12345; k < n; k++) {
        s = s * 1664525u + 1013904223u;
        bits[k] = s ^ (s >> 7) << 21;
    }
    float *f = malloc(n * sizeof *f);
    if (!f)
        return 1;
    memcpy(f, bits, n * sizeof *f);
    coll_f32_to_f16(vec, f, n);
    for (size_t i = 0; i < n; i++)
        coll_f32_to_f16(&one[i], &f[i], 1);
    for (uint32_t i = 0; i < 65536; i++)
        all16[i] = (uint16_t)i;
    coll_f16_to_f32(back_vec, all16, 65536);
    for (size_t i = 0; i < 65536; i++)
        coll_f16_to_f32(&back_one[i], &all16[i], 1);
    write_file(argv[1], "f32.bin", bits, n * sizeof *bits);
    write_file(argv[1], "f16_vec.bin", vec, n * sizeof *vec);
    write_file(argv[1], "f16_one.bin", one, n * sizeof *one);
    write_file(argv[1], "back_vec.bin", back_vec, 65536 * sizeof *back_vec);
    write_file(argv[1], "back_one.bin", back_one, 65536 * sizeof *back_one);
    printf("test_half: %zu float32 values and 65536 float16 values written to %s\n", n, argv[1]);
    free(bits), free(vec), free(one), free(back_vec), free(back_one), free(f);
    return 0;
}
