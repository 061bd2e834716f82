/* Augmentation on synthetic images against an independent reference written here the way scipy's
 * affine_transform(order=1, mode='nearest') is specified: clamp the sampling coordinate into the image,
 * then interpolate bilinearly in double precision. Exact cases: zero shift = plain conversion, integer
 * shifts = translation with the border repeated, flip = mirrored columns; half-pixel = mean of two rows. */
#include "input/augment.h"
#include "io/cifar_data.h"
#include "test_io_util.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) /* splitmix64: fixed sequence, reproducible failures */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }

static void random_image(uint8_t *img, size_t n)
{
    for (size_t i = 0; i < n; i++)
        img[i] = (uint8_t)next_u64();
}

/* Sample channel ch of `in` at real coordinates (y, x) the scipy way. */
static double sample(const uint8_t *in, int h, int w, int c, double y, double x, int ch)
{
    y = y < 0 ? 0 : y > h - 1 ? h - 1 : y;
    x = x < 0 ? 0 : x > w - 1 ? w - 1 : x;
    int y0 = (int)floor(y), x0 = (int)floor(x);
    int y1 = y0 + 1 < h ? y0 + 1 : h - 1, x1 = x0 + 1 < w ? x0 + 1 : w - 1;
    double fy = y - y0, fx = x - x0;
#define AT(r, cc) ((double)in[((size_t)(r) * (size_t)w + (size_t)(cc)) * (size_t)c + (size_t)ch])
    return (1 - fy) * ((1 - fx) * AT(y0, x0) + fx * AT(y0, x1)) + fy * ((1 - fx) * AT(y1, x0) + fx * AT(y1, x1));
#undef AT
}

static double max_error_vs_reference(const uint8_t *in, int h, int w, int c, const struct augment_params *p,
                                     const float *out)
{
    double worst = 0;
    for (int r = 0; r < h; r++)
        for (int x = 0; x < w; x++) {
            int src_x = p->flip ? w - 1 - x : x; /* Keras flips after the shift */
            for (int ch = 0; ch < c; ch++) {
                double want = sample(in, h, w, c, r + (double)p->shift_rows, src_x + (double)p->shift_cols, ch) / 255.0;
                double got = out[((size_t)r * (size_t)w + (size_t)x) * (size_t)c + (size_t)ch];
                worst = check_max(worst, fabs(got - want));
            }
        }
    return worst;
}

static int clampi(int v, int hi) { return v < 0 ? 0 : v > hi ? hi : v; }

static void test_exact_cases(void)
{
    enum { H = 32, W = 32, C = 3, N = H * W * C };
    uint8_t img[N];
    float out[N], conv[N];
    random_image(img, N);
    augment_convert(img, N, conv);
    for (int i = 0; i < N; i++)
        CHECK(conv[i] == (float)img[i] * (1.0f / 255.0f), "convert %d", i);

    struct augment_params p = {0, 0, 0};
    augment_image(img, H, W, C, &p, out);
    CHECK(memcmp(out, conv, sizeof out) == 0, "zero shift is not the identity");

    static const int shifts[][2] = {{2, -3}, {-1, 1}, {4, 4}, {-4, -4}, {0, 3}, {31, -31}, {40, -40}};
    for (size_t k = 0; k < sizeof shifts / sizeof shifts[0]; k++) {
        for (int flip = 0; flip < 2; flip++) {
            p = (struct augment_params){(float)shifts[k][0], (float)shifts[k][1], flip};
            augment_image(img, H, W, C, &p, out);
            int bad = 0;
            for (int r = 0; r < H; r++)
                for (int x = 0; x < W; x++) {
                    int sx = clampi((flip ? W - 1 - x : x) + shifts[k][1], W - 1), sy = clampi(r + shifts[k][0], H - 1);
                    for (int ch = 0; ch < C; ch++)
                        bad += out[(r * W + x) * C + ch] != conv[(sy * W + sx) * C + ch];
                }
            CHECK(bad == 0, "integer shift (%d,%d) flip %d: %d values differ", shifts[k][0], shifts[k][1], flip, bad);
        }
    }

    /* Half a pixel down the rows: the mean of rows r and r+1; the last row repeats. */
    p = (struct augment_params){0.5f, 0, 0};
    augment_image(img, H, W, C, &p, out);
    double worst = 0;
    for (int r = 0; r < H; r++)
        for (int i = 0; i < W * C; i++) {
            double want = ((double)img[r * W * C + i] + img[clampi(r + 1, H - 1) * W * C + i]) / 2 / 255;
            worst = check_max(worst, fabs(out[r * W * C + i] - want));
        }
    CHECK(worst < 1e-6, "half-pixel row shift error %g", worst);
    /* ... and half a pixel along the columns, leftwards. */
    p = (struct augment_params){0, -0.5f, 0};
    augment_image(img, H, W, C, &p, out);
    worst = 0;
    for (int r = 0; r < H; r++)
        for (int x = 0; x < W; x++)
            for (int ch = 0; ch < C; ch++) {
                double want = ((double)img[(r * W + clampi(x - 1, W - 1)) * C + ch] + img[(r * W + x) * C + ch]) / 2 / 255;
                worst = check_max(worst, fabs(out[(r * W + x) * C + ch] - want));
            }
    CHECK(worst < 1e-6, "half-pixel column shift error %g", worst);
}

static void test_random_against_reference(void)
{
    static const int sizes[][3] = {{32, 32, 3}, {5, 7, 2}, {1, 1, 1}, {3, 9, 4}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int h = sizes[s][0], w = sizes[s][1], c = sizes[s][2];
        size_t n = (size_t)h * w * c;
        uint8_t *img = malloc(n);
        float *out = malloc(n * sizeof *out);
        double worst = 0;
        for (int t = 0; t < 300; t++) {
            random_image(img, n);
            /* Mostly the recipe's range, sometimes far outside the image. */
            double range = t % 10 == 0 ? 2.5 * h : 0.1 * h;
            struct augment_params p = {(float)((2 * uniform() - 1) * range), (float)((2 * uniform() - 1) * range),
                                       uniform() < 0.5};
            augment_image(img, h, w, c, &p, out);
            worst = check_max(worst, max_error_vs_reference(img, h, w, c, &p, out));
        }
        CHECK(worst < 2e-6, "%dx%dx%d: max error %g vs reference", h, w, c, worst);
        free(img);
        free(out);
    }
}

static void test_params_and_batch(void)
{
    struct augment_params p = augment_params_from_uniform(0.0f, 0.5f, 0.49f, 32, 32);
    CHECK(fabsf(p.shift_rows + 3.2f) < 1e-6f && p.shift_cols == 0.0f && p.flip == 1, "u=(0,.5,.49): %g %g %d",
          p.shift_rows, p.shift_cols, p.flip);
    p = augment_params_from_uniform(0.999999f, 0.25f, 0.5f, 32, 20);
    CHECK(fabsf(p.shift_rows - 3.2f) < 1e-4f && fabsf(p.shift_cols + 1.0f) < 1e-6f && p.flip == 0,
          "u=(1-,.25,.5): %g %g %d", p.shift_rows, p.shift_cols, p.flip);

    enum { N = 6 };
    uint8_t *set = malloc(N * CIFAR_IMAGE_BYTES);
    random_image(set, N * CIFAR_IMAGE_BYTES);
    uint32_t index[4] = {5, 0, 3, 3};
    struct augment_params params[4];
    for (int i = 0; i < 4; i++)
        params[i] = augment_params_from_uniform((float)uniform(), (float)uniform(), (float)uniform(), 32, 32);
    float *batch = malloc(4 * CIFAR_IMAGE_BYTES * sizeof(float));
    float *one = malloc(CIFAR_IMAGE_BYTES * sizeof(float));
    augment_batch(set, index, 4, params, batch);
    for (int i = 0; i < 4; i++) {
        augment_image(set + index[i] * CIFAR_IMAGE_BYTES, 32, 32, 3, &params[i], one);
        CHECK(memcmp(one, batch + i * CIFAR_IMAGE_BYTES, CIFAR_IMAGE_BYTES * sizeof(float)) == 0, "batch image %d", i);
    }
    augment_convert_batch(set, index, 4, batch);
    for (int i = 0; i < 4; i++) {
        augment_convert(set + index[i] * CIFAR_IMAGE_BYTES, CIFAR_IMAGE_BYTES, one);
        CHECK(memcmp(one, batch + i * CIFAR_IMAGE_BYTES, CIFAR_IMAGE_BYTES * sizeof(float)) == 0, "convert batch %d",
              i);
    }
    augment_batch(set, NULL, 2, params, batch);
    augment_image(set + CIFAR_IMAGE_BYTES, 32, 32, 3, &params[1], one);
    CHECK(memcmp(one, batch + CIFAR_IMAGE_BYTES, CIFAR_IMAGE_BYTES * sizeof(float)) == 0, "NULL index");

    /* Informative only (sanitizer build, not asserted): images per second on this thread. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int reps = 200;
    for (int r = 0; r < reps; r++)
        augment_batch(set, index, 4, params, batch);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    check_note("augment_batch (sanitizer build): %.0f images/s", reps * 4 / s);
    free(set);
    free(batch);
    free(one);
}

int main(void)
{
    test_exact_cases();
    test_random_against_reference();
    test_params_and_batch();
    return check_exit("test_io_augment");
}
