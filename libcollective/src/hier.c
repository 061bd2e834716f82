/* Hierarchical allreduce (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE): when the ranks share hosts but not all
 * one host, a float32 allreduce of host memory runs in three stages instead of one exchange between all
 * ranks over the network.
 *   1. Each rank copies its values into its own segment of node-shared memory mapped by the ranks of its
 *      host (shm.c's objects, one per rank, mapped by its host's ranks only); the host's ranks wait for
 *      each other (MPI_Ibarrier on the host's communicator).
 *   2. Local rank j sums slice j of all segments, adding the host's ranks in rank order, into its leader's
 *      (local rank 0's) result area; they wait again.
 *   3. The leaders (one per host, in the order of their hosts' first ranks) allreduce the host sums with
 *      the MPI backend's rank-ordered reduce-scatter/allgather (in float16 with COLL_COMPRESS=fp16),
 *      dividing there for an average; then every rank of the host copies the result out of the leader's
 *      area once the third wait says it is there.
 * Large tensors go in pieces of PIECE floats, so the node-shared memory stays small. The second stage's
 * wait before the next piece or call writes the result area keeps a slow reader from seeing it change.
 *
 * Summation order, and so what is bit-identical: element k's result is
 *   (h_0 + h_1 + ... + h_{H-1}) [/ n], h_i = x_{i,0} + x_{i,1} + ... (host i's ranks in rank order),
 * the same on every rank and in every run, fused or not (each element alone). With one rank per host this
 * is the flat path's order, and the hierarchy is not used (nothing to gain). With several ranks on a host it
 * differs from the flat path's (((x_0 + x_1) + x_2) + x_3): equal where the sums are exact (integers,
 * two ranks), a few units in the last place apart otherwise. COLL_HIERARCHICAL=0 gives the flat order.
 *
 * A dead or stopped rank leaves its host's peers in a barrier, or the leaders in MPI: the watchdog ends the
 * job as for any collective stuck in MPI (which cannot tell it which rank stopped). */
#include "hier.h"

#include "clock.h"
#include "errors.h"
#include "half.h"
#include "mpi_backend.h"
#include "reduce.h"
#include "shm.h"
#include "world.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Floats per piece: each rank's object holds a segment and a result area of this many (4 MiB). */
#define PIECE ((size_t)1 << 19)

static struct {
    MPI_Comm host, leaders; /* leaders: MPI_COMM_NULL except on local rank 0 */
    struct coll_shm_region *region;
    int local, nlocal, *world_of; /* world_of[j]: the world rank of local rank j */
    const float **part;
} h = {MPI_COMM_NULL, MPI_COMM_NULL, NULL, 0, 0, NULL, NULL};

static float *segment(int j) { return coll_shm_rank_data(h.region, h.world_of[j]); }
static float *result(void) { return segment(0) + PIECE; }

/* Words each rank tells the others at coll_init. */
enum { W_PID, W_CLOCK, W_KEY, W_SHM, W_HIER, W_FP16, WORDS };

static int disagree(const int64_t *all, int word, const char *name, const char *const *val)
{
    for (int r = 1; r < coll_world.size; r++)
        if (all[WORDS * r + word] != all[word])
            return coll_fail(COLL_ERR_ARG, "libcollective: %s differs across ranks: rank 0 has %s, rank %d %s", name,
                             val[all[word] != 0], r, val[all[WORDS * r + word] != 0]);
    return COLL_OK;
}

void coll_hier_close(void)
{
    coll_shm_block_free(h.region);
    if (h.host != MPI_COMM_NULL)
        MPI_Comm_free(&h.host);
    if (h.leaders != MPI_COMM_NULL)
        MPI_Comm_free(&h.leaders);
    free(h.world_of);
    free(h.part);
    h.region = NULL;
    h.world_of = NULL;
    h.part = NULL;
    coll_world.hier = coll_world.compress = 0;
    coll_world.hosts = 1;
}

/* The host communicator, the leaders' and the node-shared segments; 0 when every rank falls back. */
static int open_hosts(const int64_t *all, const int *host_of, char *err)
{
    const int n = coll_world.size, me = coll_world.rank;
    int rc;
    unsigned char *same = malloc((size_t)n);
    h.world_of = malloc((size_t)n * sizeof *h.world_of);
    h.part = malloc((size_t)n * sizeof *h.part);
    if (!same || !h.world_of || !h.part) {
        free(same);
        return coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for the hosts' tables");
    }
    h.nlocal = 0;
    for (int r = 0; r < n; r++) {
        same[r] = host_of[r] == host_of[me];
        if (same[r])
            h.world_of[h.nlocal++] = r;
        if (r == me)
            h.local = h.nlocal - 1;
    }
    if ((rc = MPI_Comm_split(coll_world.data, host_of[me], me, &h.host)) != MPI_SUCCESS ||
        (rc = MPI_Comm_split(coll_world.data, h.local == 0 ? 0 : MPI_UNDEFINED, me, &h.leaders)) != MPI_SUCCESS) {
        free(same);
        return coll_fail(coll_mpi_error(err, "MPI_Comm_split (hosts)", rc), "%s", err);
    }
    MPI_Comm_set_errhandler(h.host, MPI_ERRORS_RETURN);
    if (h.leaders != MPI_COMM_NULL)
        MPI_Comm_set_errhandler(h.leaders, MPI_ERRORS_RETURN);
    int shared = coll_shm_host_region(2 * PIECE * sizeof(float), all, same, &h.region);
    free(same);
    return shared < 0 ? COLL_ERR_BACKEND : shared;
}

int coll_hier_open(int compress_fp16)
{
    static const char *const onoff[] = {"0", "1"}, *const fp16[] = {"none", "fp16"};
    char err[COLL_ERRLEN];
    const int n = coll_world.size;
    coll_world.hosts = 1;
    coll_world.hier = coll_world.compress = 0;
    if (compress_fp16 && !coll_half_available())
        return coll_fail(COLL_ERR_UNSUPPORTED, "libcollective: float16 compression: this build has no _Float16");
    if (!coll_world.use_mpi || n < 2)
        return COLL_OK;
    int64_t mine[WORDS] = {(int64_t)getpid(), (int64_t)(coll_now() * 1e9), (int64_t)coll_shm_host_key(),
                           coll_world.env.shm, coll_world.env.hierarchical, compress_fp16};
    int64_t *all = malloc(WORDS * (size_t)n * sizeof *all);
    int *host_of = malloc((size_t)n * sizeof *host_of);
    int rc = all && host_of ? COLL_OK : coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for the hosts' keys");
    if (!rc && (rc = MPI_Allgather(mine, WORDS, MPI_INT64_T, all, WORDS, MPI_INT64_T, coll_world.ctrl)) != MPI_SUCCESS)
        rc = coll_fail(coll_mpi_error(err, "MPI_Allgather (hosts)", rc), "%s", err);
    if (!rc && !(rc = disagree(all, W_HIER, "COLL_HIERARCHICAL", onoff)))
        rc = disagree(all, W_FP16, "float16 compression (COLL_COMPRESS or coll_init_opts.compress_fp16)", fp16);
    int largest = 1, shm = 1, hosts = 0;
    for (int r = 0; !rc && r < n; r++) { /* hosts numbered in the order of their first ranks */
        int same = 1;
        host_of[r] = -1;
        for (int q = 0; q < r; q++)
            if (all[WORDS * q + W_KEY] == all[WORDS * r + W_KEY]) {
                host_of[r] = host_of[q];
                same++;
            }
        if (host_of[r] < 0)
            host_of[r] = hosts++;
        largest = same > largest ? same : largest;
        shm &= all[WORDS * r + W_SHM] != 0;
    }
    if (!rc) {
        coll_world.hosts = hosts;
        coll_world.compress = compress_fp16 && hosts > 1;
    }
    /* One host: the control block's node-shared path; one rank per host: nothing to gather first. */
    if (!rc && coll_world.hosts > 1 && largest > 1 && shm && coll_world.env.hierarchical) {
        int shared = open_hosts(all, host_of, err);
        if (shared < 0)
            rc = shared;
        else
            coll_world.hier = shared;
    }
    free(all);
    free(host_of);
    if (rc || !coll_world.hier) {
        const int spread = coll_world.hosts, compress = coll_world.compress;
        coll_hier_close();
        coll_world.hosts = spread;
        coll_world.compress = rc ? 0 : compress;
    }
    return rc;
}

/* The host's ranks wait for each other; what each wrote before is seen by all after. */
static int host_barrier(char *err)
{
    MPI_Request req;
    atomic_thread_fence(memory_order_seq_cst);
    int rc = MPI_Ibarrier(h.host, &req);
    rc = rc != MPI_SUCCESS ? coll_mpi_error(err, "MPI_Ibarrier (host)", rc)
                           : coll_mpi_wait(1, &req, "MPI_Ibarrier (host)", err);
    atomic_thread_fence(memory_order_seq_cst);
    return rc;
}

static int piece(const float *send, float *recv, size_t len, float divide, char *err)
{
    const int m = h.nlocal;
    const size_t lo = len * (size_t)h.local / (size_t)m, hi = len * (size_t)(h.local + 1) / (size_t)m;
    float *res = result();
    int rc;
    memcpy(segment(h.local), send, len * sizeof(float));
    if ((rc = host_barrier(err)))
        return rc;
    for (int j = 0; j < m; j++)
        h.part[j] = segment(j) + lo;
    if (m == 1)
        memcpy(res + lo, h.part[0], (hi - lo) * sizeof(float));
    else
        coll_sum_f32(res + lo, h.part, m, hi - lo, 0.0f);
    if ((rc = host_barrier(err)))
        return rc;
    if (h.leaders != MPI_COMM_NULL &&
        (rc = coll_mpi_allreduce_f32(h.leaders, res, res, len, divide, coll_world.compress,
                                     coll_world.env.wire_pieces != 0, err)))
        return rc;
    if ((rc = host_barrier(err)))
        return rc;
    memcpy(recv, res, len * sizeof(float));
    return COLL_OK;
}

static int allreduce(const void *send, void *recv, size_t count, enum coll_dtype dtype, enum coll_op op, char *err)
{
    if (dtype != COLL_FLOAT32)
        return coll_mpi_backend.allreduce(send, recv, count, dtype, op, err);
    const float divide = op == COLL_AVERAGE ? (float)coll_world.size : 0.0f;
    for (size_t off = 0; off < count; off += PIECE) {
        const size_t len = count - off < PIECE ? count - off : PIECE;
        int rc = piece((const float *)send + off, (float *)recv + off, len, divide, err);
        if (rc)
            return rc;
    }
    return COLL_OK;
}

static int broadcast(void *buf, size_t count, enum coll_dtype type, int root, char *err)
{
    return coll_mpi_backend.broadcast(buf, count, type, root, err);
}

static int allgather(const void *send, void *recv, size_t count, enum coll_dtype type, char *err)
{
    return coll_mpi_backend.allgather(send, recv, count, type, err);
}

static int alloc(void **p, size_t bytes, char *err) { return coll_mpi_backend.alloc(p, bytes, err); }
static void release(void *p) { coll_mpi_backend.free(p); }
static int copy(void *dst, const void *src, size_t bytes, char *err) { return coll_mpi_backend.copy(dst, src, bytes, err); }
static int sync_all(char *err) { return coll_mpi_backend.sync(err); }

const struct coll_backend coll_hier_backend = {
    .name = "MPI (hierarchical)",
    .alloc = alloc,
    .free = release,
    .copy = copy,
    .allreduce = allreduce,
    .broadcast = broadcast,
    .allgather = allgather,
    .sync = sync_all,
};
