/* Stall watchdog output: which collective waits, for how long, and for which ranks (Horovod's stall
 * inspector). Called by the coordinator on rank 0. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

void coll_stall_report(int64_t seq, const struct coll_desc *d, const int64_t *ready, int size, double waited,
                       int abort_now)
{
    char what[160], ranks[400];
    size_t used = 0;
    int missing = 0, listed = 0;
    coll_desc_format(d, what, sizeof what);
    ranks[0] = '\0';
    for (int r = 0; r < size; r++) {
        if (ready[r] > seq)
            continue;
        missing++;
        if (used + 24 < sizeof ranks) {
            used += (size_t)snprintf(ranks + used, sizeof ranks - used, "%s%d", listed ? ", " : "", r);
            listed++;
        }
    }
    if (listed < missing)
        snprintf(ranks + used, sizeof ranks - used, ", ... (%d ranks in all)", missing);
    fprintf(stderr,
            "libcollective: stall: collective #%lld (%s) has waited %.1f s for rank%s %s, which %s not reached "
            "it%s\n",
            (long long)seq, what, waited, missing == 1 ? "" : "s", ranks, missing == 1 ? "has" : "have",
            abort_now ? "; aborting the job (COLL_STALL_ABORT_SEC)" : "");
    fflush(stderr);
    if (abort_now)
        MPI_Abort(MPI_COMM_WORLD, 1);
}
