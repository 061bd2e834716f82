/* Which ranks a stalled collective waits for, in words (Horovod's stall inspector). The coordinator on rank
 * 0 publishes them; the watchdog (watchdog.c) prints them. */
#include "coord.h"

#include <stdio.h>

int coll_stall_ranks(int64_t seq, const int64_t *ready, int size, char *buf, size_t len)
{
    size_t used = 0;
    int missing = 0, listed = 0;
    for (int r = 0; r < size; r++)
        if (ready[r] <= seq)
            missing++;
    used = (size_t)snprintf(buf, len, "rank%s ", missing == 1 ? "" : "s");
    for (int r = 0; r < size && used < len; r++) {
        if (ready[r] > seq)
            continue;
        if (used + 48 >= len) {
            snprintf(buf + used, len - used, ", ... (%d ranks in all)", missing);
            break;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%d", listed ? ", " : "", r);
        listed++;
    }
    return missing;
}
