/* image: the shape of a CIFAR-10 image and the parameters of its augmentation, shared by the files that
 * read images (io/cifar_data.h), augment them on the host (input/augment.h) and on a device (a kernel
 * table's input engine, core/input_engine.h). The augmentation itself is described in input/augment.h. */
#ifndef TRAINER_IMAGE_H
#define TRAINER_IMAGE_H

#define CIFAR_H 32
#define CIFAR_W 32
#define CIFAR_C 3
#define CIFAR_IMAGE_BYTES (CIFAR_H * CIFAR_W * CIFAR_C) /* 3072 */

/* One image's draw (input/augment.h: augment_params_from_uniform). */
struct augment_params {
    float shift_rows; /* Keras tx: out(r, .) samples in(r + shift_rows, .) */
    float shift_cols; /* Keras ty: out(., c) samples in(., c + shift_cols) */
    int flip;         /* nonzero: mirror columns after the shift */
};

#endif
