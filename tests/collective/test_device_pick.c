/* One rank's GPU as coll_init picks it, on real MPI ranks with the stand-in NCCL plugin (nccl_stub.c):
 * prints "rank R local L device D" or "rank R refused: MESSAGE" (test_device_pick.sh reads them). */
#include <stdio.h>

#include "testlib.h"

int main(void)
{
    check_mpi_ranks();
    check_quiet(1); /* test_device_pick.sh reads every line: only a failure adds its own */
    int rc = coll_init(&(struct coll_init_opts){.use_device = 1});
    if (rc != COLL_OK) {
        printf("refused: %s\n", coll_last_error());
        OK(coll_init(NULL)); /* MPI stays up after a refusal: host memory only, then a clean end */
        OK(coll_finalize());
        return check_exit("test_device_pick");
    }
    printf("rank %d local %d device %d\n", coll_rank(), coll_local_rank(), coll_device());
    OK(coll_finalize());
    return check_exit("test_device_pick");
}
