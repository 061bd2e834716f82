/* augment: Keras ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1, fill_mode='nearest',
 * horizontal_flip=True) on uint8 CIFAR images, producing the float32 network input (value / 255).
 *
 * What Keras 2.1.6 does (keras/preprocessing/image.py, random_transform + apply_transform), and so what
 * this does, per image of height H and width W:
 *   tx = U(-0.1, 0.1) * H   (rows)      ty = U(-0.1, 0.1) * W   (columns)      real-valued
 *   shifted(r, c) = in(r + tx, c + ty)   sampled by scipy.ndimage.affine_transform(order=1, mode='nearest'):
 *                   bilinear interpolation between the four neighbours, each neighbour's row and column
 *                   clamped to the image (the border pixel repeats outward)
 *   then, with probability 0.5, a horizontal flip:  out(r, c) = shifted(r, W - 1 - c)
 * So a positive shift moves the content up / left. The random draws are NOT made here: the trainer draws
 * them from its counter-based RNG of (seed, epoch, step, rank) and passes them in (struct augment_params),
 * which keeps augmentation reproducible and lets it run on any thread.
 *
 * Layout: input uint8 HWC (cifar_data.h), output float32 HWC (NHWC for a batch), out = value / 255 computed
 * as value * (1/255) folded into the interpolation weights (no per-pixel division). With zero shifts and no
 * flip the output equals augment_convert() exactly. Results for a given (image, params) do not depend on
 * the batch, the thread or the order of calls.
 *
 * Everything here works on any H, W, C (the tests use small synthetic images); CIFAR is 32x32x3. Functions
 * are thread-safe (no shared state). */
#ifndef TRAINER_AUGMENT_H
#define TRAINER_AUGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/image.h" /* struct augment_params */

/* Keras's ranges for this recipe: shifts are drawn uniformly in [-AUGMENT_SHIFT_FRACTION * H, +...*H). */
#define AUGMENT_SHIFT_FRACTION 0.1f

/* Map three uniform draws u_rows, u_cols in [0, 1) and u_flip in [0, 1) to parameters exactly as Keras does
 * for an HxW image: shift = (2u - 1) * 0.1 * size, flip = u_flip < 0.5. The trainer's RNG supplies the
 * draws; having the mapping in one place keeps the recipe in this file. */
struct augment_params augment_params_from_uniform(float u_rows, float u_cols, float u_flip, int h, int w);

/* One image: in (h*w*c uint8, HWC) -> out (h*w*c float32, HWC). |shifts| may be any finite value. */
void augment_image(const uint8_t *in, int h, int w, int c, const struct augment_params *p, float *out);

/* A batch of CIFAR images (32x32x3) gathered from a data set: image i of the batch is
 * set_images + index[i] * CIFAR_IMAGE_BYTES, transformed with params[i], written at out + i * 3072.
 * index may be NULL (images taken in order from set_images). */
void augment_batch(const uint8_t *set_images, const uint32_t *index, size_t n,
                   const struct augment_params *params, float *out);

/* No augmentation (--no-augmentation, validation, evaluate): out[k] = in[k] / 255 for `count` values. */
void augment_convert(const uint8_t *in, size_t count, float *out);

/* The same for a gathered batch of CIFAR images (index may be NULL as above). */
void augment_convert_batch(const uint8_t *set_images, const uint32_t *index, size_t n, float *out);

#endif
