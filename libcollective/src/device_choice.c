/* Which GPU a rank takes: see coll_device_choice in internal.h. */
#include "internal.h"

int coll_device_choice(int visible, int local_rank)
{
    if (visible <= 0 || local_rank < 0)
        return -1;
    return local_rank % visible;
}
