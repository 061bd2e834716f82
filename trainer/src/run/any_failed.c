/* any_failed: all ranks agree on a failure of one (any_failed.h). */
#include "run/any_failed.h"

#include <stdio.h>

#include "collective.h"

int any_failed(int failed)
{
    int v = failed != 0;
    if (coll_size() > 1 && coll_allreduce(&v, &v, 1, COLL_INT32, COLL_SUM) != COLL_OK) {
        fprintf(stderr, "cifar-train: allreduce failed: %s\n", coll_last_error());
        return 1;
    }
    return v != 0;
}
