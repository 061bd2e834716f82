/* augment: Keras-style shift + flip on uint8 HWC images, to float32 / 255. Contract in augment.h.
 *
 * A pure translation has the same fractional part at every pixel, so the four bilinear weights are constant
 * over the image and are computed once, with the 1/255 scale folded in; only the clamped neighbour indices
 * vary, per row and per column. Clamping each neighbour index to the image gives the same values as scipy's
 * mode='nearest', which clamps the sampling coordinate. */
#include "input/augment.h"

#include "io/cifar_data.h"

#include <math.h>

static inline int clampi(int v, int hi) { return v < 0 ? 0 : v > hi ? hi : v; }

struct augment_params augment_params_from_uniform(float u_rows, float u_cols, float u_flip, int h, int w)
{
    struct augment_params p = {
        .shift_rows = (2.0f * u_rows - 1.0f) * AUGMENT_SHIFT_FRACTION * (float)h,
        .shift_cols = (2.0f * u_cols - 1.0f) * AUGMENT_SHIFT_FRACTION * (float)w,
        .flip = u_flip < 0.5f,
    };
    return p;
}

void augment_image(const uint8_t *in, int h, int w, int c, const struct augment_params *p, float *out)
{
    const float scale = 1.0f / 255.0f;
    /* Beyond one image size every tap is clamped to the border anyway; bounding the shift keeps the int
     * conversion defined for any finite input. */
    const float sr = fminf(fmaxf(p->shift_rows, (float)-h - 1.0f), (float)h + 1.0f);
    const float sc = fminf(fmaxf(p->shift_cols, (float)-w - 1.0f), (float)w + 1.0f);
    const float floor_r = floorf(sr), floor_c = floorf(sc);
    const float fr = sr - floor_r, fc = sc - floor_c;
    const int ir = (int)floor_r, ic = (int)floor_c;
    /* weights: [top/bottom][left/right] */
    const float w00 = (1.0f - fr) * (1.0f - fc) * scale, w01 = (1.0f - fr) * fc * scale;
    const float w10 = fr * (1.0f - fc) * scale, w11 = fr * fc * scale;
    const size_t row_stride = (size_t)w * (size_t)c;

    for (int r = 0; r < h; r++) {
        const uint8_t *top = in + (size_t)clampi(r + ir, h - 1) * row_stride;
        const uint8_t *bot = in + (size_t)clampi(r + ir + 1, h - 1) * row_stride;
        float *dst = out + (size_t)r * row_stride;
        for (int x = 0; x < w; x++) {
            const int src_col = (p->flip ? w - 1 - x : x) + ic;
            const size_t left = (size_t)clampi(src_col, w - 1) * (size_t)c;
            const size_t right = (size_t)clampi(src_col + 1, w - 1) * (size_t)c;
            for (int ch = 0; ch < c; ch++)
                dst[(size_t)x * (size_t)c + (size_t)ch] =
                    w00 * top[left + (size_t)ch] + w01 * top[right + (size_t)ch] + w10 * bot[left + (size_t)ch] +
                    w11 * bot[right + (size_t)ch];
        }
    }
}

void augment_batch(const uint8_t *set_images, const uint32_t *index, size_t n, const struct augment_params *params,
                   float *out)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *img = set_images + (size_t)(index ? index[i] : i) * CIFAR_IMAGE_BYTES;
        augment_image(img, CIFAR_H, CIFAR_W, CIFAR_C, &params[i], out + i * CIFAR_IMAGE_BYTES);
    }
}

void augment_convert(const uint8_t *in, size_t count, float *out)
{
    const float scale = 1.0f / 255.0f;
    for (size_t k = 0; k < count; k++)
        out[k] = (float)in[k] * scale;
}

void augment_convert_batch(const uint8_t *set_images, const uint32_t *index, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *img = set_images + (size_t)(index ? index[i] : i) * CIFAR_IMAGE_BYTES;
        augment_convert(img, CIFAR_IMAGE_BYTES, out + i * CIFAR_IMAGE_BYTES);
    }
}
