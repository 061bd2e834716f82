/* Which GPU a rank takes, and whether two ranks of a node would take the same one: see coll_device_choice
 * and coll_device_shared in device_choice.h. */
#include "device_choice.h"

int coll_device_choice(int visible, int local_rank)
{
    if (visible <= 0 || local_rank < 0)
        return -1;
    return local_rank % visible;
}

/* FNV-1a, 64 bits: equal for equal strings, and two different lists of GPU ids colliding is not a case to
 * plan for. Unset and "-" differ from every list. */
uint64_t coll_visible_digest(const char *cuda_visible_devices)
{
    uint64_t h = 14695981039346656037u;
    const char *s = cuda_visible_devices ? cuda_visible_devices : "-";
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return cuda_visible_devices ? h : ~h;
}

int coll_device_shared(const struct coll_gpu_pick *picks, int n, int *a, int *b)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (picks[i].device >= 0 && picks[i].device == picks[j].device && picks[i].visible == picks[j].visible) {
                *a = i;
                *b = j;
                return 1;
            }
    return 0;
}
