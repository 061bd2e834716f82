/* recipe.h's pure parts: the fingerprint tells a changed byte and a shorter set apart, and recipe_compare
 * names each differing rank and field with both values (the MPI side is tests/trainer/test_recipe.sh). */
#include <stdio.h>
#include <string.h>

#include "../check.h"

#include "run/recipe.h"

int main(void)
{
    static uint8_t images[4 * CIFAR_IMAGE_BYTES], labels[4] = {1, 2, 3, 4};
    for (size_t i = 0; i < sizeof images; i++)
        images[i] = (uint8_t)(i * 7);
    struct cifar_set train = {4, images, labels}, fewer = {3, images, labels}, test = {2, images, labels};
    const struct train_options defaults = {.batch = 32, .augment = 1, .seed = 1};
    struct train_options o = defaults;

    struct recipe all[3];
    char msg[512];
    recipe_of(&all[0], &o, 3, &train, &test);
    recipe_of(&all[1], &o, 3, &train, &test);
    recipe_of(&all[2], &o, 3, &train, &test);
    CHECK(recipe_compare(all, 3, msg, sizeof msg) == 0 && !msg[0], "identical recipes agree: %s", msg);
    CHECK(all[0].v[RECIPE_EPOCHS] == 34, "epochs default to ceil(100 / 3)");

    o.batch = 64;
    o.lr = 0.5;
    recipe_of(&all[2], &o, 3, &train, &test);
    int n = recipe_compare(all, 3, msg, sizeof msg);
    CHECK(n == 1 && !strcmp(msg, "rank 2: batch_size 64 (rank 0: 32), lr 0.5 (rank 0: default)"),
          "batch and lr of rank 2: %s", msg);

    o = defaults;
    recipe_of(&all[1], &o, 3, &fewer, &test);
    images[5] ^= 1; /* rank 2 sees one changed pixel */
    recipe_of(&all[2], &o, 3, &train, &test);
    images[5] ^= 1;
    n = recipe_compare(all, 3, msg, sizeof msg);
    CHECK(n == 2 && strstr(msg, "rank 1: train_images 3 (rank 0: 4), train_data ") &&
              strstr(msg, "\nrank 2: train_data ") && strstr(msg, ", test_data ") && !strstr(msg, "rank 1: test"),
          "fewer images on rank 1, a changed pixel on rank 2 (in both sets): %s", msg);

    char tiny[24];
    n = recipe_compare(all, 3, tiny, sizeof tiny);
    CHECK(n == 2 && strlen(tiny) == sizeof tiny - 1, "a short buffer is cut, the count stays: %s", tiny);
    return check_exit("test_recipe_compare");
}
