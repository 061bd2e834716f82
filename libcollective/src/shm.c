/* Node-shared memory regions (what coll_host_alloc, host_alloc.c, hands out) and the allreduce that reads
 * them in place.
 *
 * Why: with every rank on one node, MPI moves a float32 allreduce through its shared-memory transport,
 * which for large messages pins the peer's pages one by one for a single-copy read (process_vm_readv), then
 * the reduced half comes back the same way. At 2 ranks x 1 thread that cost about 1.8 ms of CPU per
 * training step on the cores the compute threads need, 40% of it the kernel's page pinning
 * (docs/benchmarks.md). When the buffer itself lives in memory every rank has mapped, a rank can sum its
 * slice straight out of all ranks' buffers and write the result into all of them: no pinning, no message,
 * no copy in or out, and the one reduction (coll_sum_f32, ranks added in order) the MPI path uses, so both
 * agree to the bit.
 *
 * A region is one POSIX shared-memory object per rank: a header page (the rank's progress mark) and the
 * data. Whether the ranks share a host is decided once, at coll_init (hostctl.c, which keeps its control
 * block in such a region, made here by coll_shm_block): only then does coll_host_alloc() share, and its
 * reductions wait on the control block's bells instead of polling. coll_host_alloc() is collective: the
 * ranks agree on the size and on a name stem (rank 0's pid and a clock value) by allgather. Each rank
 * creates its own object (O_EXCL, 0600), all map every rank's object, and each unlinks its own name once
 * all have mapped it, so nothing is left in /dev/shm after the call returns, whatever happens to the job
 * later. A failure on any rank (no room left in /dev/shm, say) makes every rank fall back to private
 * memory, said on stderr by the rank that failed: the collectives then go through MPI, as for any other
 * buffer.
 *
 * The reduction (coll_shm_allreduce) runs on the progress thread once the requests are granted, which
 * means every rank has queued them, so every rank's data is final. Rank r sums its slice
 * [count*r/n, count*(r+1)/n) of each tensor, 16 KiB at a time through a buffer that stays in L1, and
 * copies the sums into every rank's buffer, or hands them to an apply request's function, which then
 * does that slice's work for every rank (collective.h); slices are disjoint, so nothing is read after
 * another rank wrote it. It then publishes the batch's mark in its header and sleeps on its bell
 * (the caller's, hostctl.c's) until every rank's mark has reached it; a rank whose mark raises the lowest
 * rings the others. Only then may any rank's program read its results, or write its buffer again. A rank
 * that stops or dies meanwhile leaves the others asleep until the watchdog ends the job. */
#include "shm.h"

#include "clock.h"
#include "errors.h"
#include "reduce.h"
#include "world.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The header page before each rank's data; the data stays page-aligned. */
#define HEAD_BYTES 4096
/* Floats summed at a time into the L1-resident buffer before they are copied out. */
#define CHUNK 4096

struct shm_head {
    _Atomic int64_t done; /* 1 + the last sequence number this rank has finished reducing its slices of */
};

struct coll_shm_region {
    struct coll_shm_region *next;
    int64_t id;        /* this region is the id-th coll_host_alloc of the process (every rank counts alike) */
    char *data;        /* what coll_host_alloc returned */
    size_t bytes;      /* as asked */
    size_t map_bytes;  /* header + data, whole pages; shared regions only */
    char **map;        /* map[r]: rank r's object as mapped here (header first); NULL for private memory */
    const float **part; /* coll_shm_allreduce's scratch: one pointer per rank */
    unsigned char *peers; /* which ranks map each other's objects (coll_shm_host_region); NULL: all */
};

static struct coll_shm_region *regions;
static int64_t next_id;

static char *data_of(const struct coll_shm_region *g, int r) { return g->map[r] + HEAD_BYTES; }
static struct shm_head *head_of(const struct coll_shm_region *g, int r) { return (struct shm_head *)g->map[r]; }

/* id -1 is coll_shm_block's control block, -2 coll_shm_host_region's. */
static void object_name(char *buf, size_t len, const int64_t *stem, int64_t id, int rank)
{
    if (id == -2)
        snprintf(buf, len, "/libcollective.%lld.%llx.host.%d", (long long)stem[0], (unsigned long long)stem[1],
                 rank);
    else if (id < 0)
        snprintf(buf, len, "/libcollective.%lld.%llx.ctl.%d", (long long)stem[0], (unsigned long long)stem[1],
                 rank);
    else
        snprintf(buf, len, "/libcollective.%lld.%llx.%lld.%d", (long long)stem[0], (unsigned long long)stem[1],
                 (long long)id, rank);
}

/* Maps rank r's object (creating it when r is this rank); returns 0 or an errno, with what failed in why. */
static int map_object(struct coll_shm_region *g, const int64_t *stem, int r, char *why, size_t len)
{
    char name[96];
    object_name(name, sizeof name, stem, g->id, r);
    const int mine = r == coll_world.rank;
    int fd = shm_open(name, mine ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600), e = fd < 0 ? errno : 0;
    /* Reserve the pages now: with ftruncate alone a tmpfs that fills up (a container's 64 MiB /dev/shm)
     * answers the first touch of a page it cannot back with SIGBUS instead of an error here. */
    if (!e && mine)
        e = posix_fallocate(fd, 0, (off_t)g->map_bytes);
    struct stat st;
    if (!e && fstat(fd, &st) != 0)
        e = errno;
    if (!e && (st.st_uid != geteuid() || (size_t)st.st_size != g->map_bytes)) /* not our peer's object */
        e = EPERM;
    if (!e && (g->map[r] = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        g->map[r] = NULL;
        e = errno;
    }
    if (fd >= 0)
        close(fd);
    if (e)
        snprintf(why, len, "%s %s: %s", mine ? "creating" : "opening", name, strerror(e));
    return e;
}

static void unmap_all(struct coll_shm_region *g)
{
    for (int r = 0; g->map && r < coll_world.size; r++)
        if (g->map[r])
            munmap(g->map[r], g->map_bytes);
}

static void region_free(struct coll_shm_region *g)
{
    if (g->map)
        unmap_all(g);
    else
        free(g->data);
    free(g->map);
    free(g->part);
    free(g->peers);
    free(g);
}

/* coll_shm_block's count of failures everywhere (coll_shm_share): coll_init, before the progress thread
 * runs, when this thread may call MPI itself. */
static int failures_mpi(int mine)
{
    int32_t v = mine != 0;
    char err[COLL_ERRLEN];
    int rc = MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT32_T, MPI_SUM, coll_world.ctrl);
    if (rc != MPI_SUCCESS) {
        coll_fail(coll_mpi_error(err, "MPI_Allreduce (node-shared memory)", rc), "%s", err);
        return -1;
    }
    return v;
}

/* FNV-1a (64 bits) of len bytes of s, continuing from h. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h;
}

/* This host's key: COLL_HOST_ID when set, else the host name and the boot id, which tells apart machines
 * (containers) that share a name; without a readable boot id the name alone, as NCCL does. */
uint64_t coll_shm_host_key(void)
{
    const uint64_t basis = 0xcbf29ce484222325ULL;
    if (*coll_world.env.host_id)
        return fnv1a(basis, coll_world.env.host_id, strlen(coll_world.env.host_id));
    char name[256] = "", boot[64] = "";
    gethostname(name, sizeof name - 1);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof boot, f))
            boot[0] = '\0';
        fclose(f);
    }
    boot[strcspn(boot, "\n")] = '\0';
    return fnv1a(fnv1a(basis, name, strlen(name) + 1), boot, strlen(boot)); /* the NUL ends the name */
}

int coll_shm_share(struct coll_shm_region *g, const int64_t *stem, const char *what, int (*failures_everywhere)(int))
{
    char why[256] = "";
    const int n = coll_world.size, me = coll_world.rank;
    g->map_bytes = HEAD_BYTES + ((g->bytes + HEAD_BYTES - 1) / HEAD_BYTES) * HEAD_BYTES;
    g->map = calloc((size_t)n, sizeof *g->map);
    g->part = calloc((size_t)n, sizeof *g->part);
    int bad = !g->map || !g->part;
    if (bad)
        snprintf(why, sizeof why, "no memory for %d ranks' mappings", n);
    else
        bad = map_object(g, stem, me, why, sizeof why) != 0;
    int total = failures_everywhere(bad); /* every rank has created its object, or some could not */
    for (int r = 0; total == 0 && r < n; r++)
        if (r != me && (!g->peers || g->peers[r]) && (bad = map_object(g, stem, r, why, sizeof why) != 0))
            break;
    if (total == 0)
        total = failures_everywhere(bad); /* every rank has mapped every object */
    if (g->map && g->map[me]) {
        char name[96];
        object_name(name, sizeof name, stem, g->id, me);
        shm_unlink(name); /* the mappings keep it; nothing stays behind in /dev/shm */
    }
    if (total == 0) {
        g->data = data_of(g, me);
        return 1;
    }
    if (bad)
        fprintf(stderr, "libcollective: rank %d: no node-shared memory for %s (%s); %s\n", me, what, why,
                g->id == -1   ? "the ranks of this host coordinate and reduce through MPI"
                : g->id == -2 ? "every rank reduces across hosts through MPI alone"
                              : "its allreduces go through MPI");
    if (g->map)
        unmap_all(g);
    free(g->map);
    free(g->part);
    g->map = NULL;
    g->part = NULL;
    return total < 0 ? -1 : 0;
}

int coll_shm_block(size_t bytes, struct coll_shm_region **out)
{
    const int n = coll_world.size;
    char err[COLL_ERRLEN];
    *out = NULL;
    /* Every rank takes part, COLL_SHM=0 or not, so that one rank's setting cannot leave the others in
     * this allgather: the block is shared only when every rank has rank 0's key and none said 0. */
    enum { WORDS = 4 };
    int64_t mine[WORDS] = {(int64_t)getpid(), (int64_t)(coll_now() * 1e9), (int64_t)coll_shm_host_key(),
                             coll_world.env.shm};
    int64_t *all = malloc(WORDS * (size_t)n * sizeof *all);
    struct coll_shm_region *g = calloc(1, sizeof *g);
    if (!all || !g) {
        free(all);
        free(g);
        return coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for the node-shared control block");
    }
    int rc = MPI_Allgather(mine, WORDS, MPI_INT64_T, all, WORDS, MPI_INT64_T, coll_world.ctrl);
    int one_host = rc == MPI_SUCCESS;
    for (int r = 0; one_host && r < n; r++)
        one_host = all[WORDS * r + 2] == all[2] && all[WORDS * r + 3];
    g->id = -1;
    g->bytes = bytes;
    int shared = one_host ? coll_shm_share(g, all, "the control block", failures_mpi) : 0;
    free(all);
    if (rc != MPI_SUCCESS) {
        free(g);
        return coll_fail(coll_mpi_error(err, "MPI_Allgather (host keys)", rc), "%s", err);
    }
    if (shared <= 0) {
        free(g);
        return shared < 0 ? COLL_ERR_BACKEND : COLL_OK;
    }
    *out = g;
    return COLL_OK;
}

int coll_shm_host_region(size_t bytes, const int64_t *stem, const unsigned char *same_host,
                         struct coll_shm_region **out)
{
    const size_t n = (size_t)coll_world.size;
    struct coll_shm_region *g = calloc(1, sizeof *g);
    *out = NULL;
    if (!g || !(g->peers = malloc(n))) {
        free(g);
        coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for the hosts' reduction scratch");
        return -1;
    }
    memcpy(g->peers, same_host, n);
    g->id = -2;
    g->bytes = bytes;
    int shared = coll_shm_share(g, stem, "the reduction across hosts", failures_mpi);
    if (shared <= 0)
        region_free(g);
    else
        *out = g;
    return shared;
}

void coll_shm_block_free(struct coll_shm_region *g)
{
    if (g)
        region_free(g);
}

void *coll_shm_rank_data(const struct coll_shm_region *g, int r)
{
    return data_of(g, r);
}

struct coll_shm_region *coll_shm_region_new(size_t bytes)
{
    struct coll_shm_region *g = calloc(1, sizeof *g);
    if (!g) {
        coll_fail(COLL_ERR_NOMEM, "libcollective: no memory for a coll_host_alloc region");
        return NULL;
    }
    g->id = next_id++;
    g->bytes = bytes;
    return g;
}

int64_t coll_shm_region_id(const struct coll_shm_region *g)
{
    return g->id;
}

void *coll_shm_region_keep(struct coll_shm_region *g)
{
    if (!g->map) {
        void *p = NULL;
        if (posix_memalign(&p, HEAD_BYTES, g->bytes ? g->bytes : 1) != 0) {
            coll_fail(COLL_ERR_NOMEM, "libcollective: coll_host_alloc: no memory for %zu bytes", g->bytes);
            free(g);
            return NULL;
        }
        memset(p, 0, g->bytes);
        g->data = p;
    }
    g->next = regions;
    regions = g;
    return g->data;
}

int coll_shm_region_drop(void *p)
{
    for (struct coll_shm_region **at = &regions; *at; at = &(*at)->next)
        if ((*at)->data == p) {
            struct coll_shm_region *g = *at;
            *at = g->next;
            region_free(g);
            return COLL_OK;
        }
    return coll_fail(COLL_ERR_ARG, "libcollective: coll_host_free(%p): not memory from coll_host_alloc", p);
}

void *coll_shm_peer(const void *p, int rank)
{
    int64_t id, offset;
    const struct coll_shm_region *g = p ? coll_shm_find(p, 0, &id, &offset) : NULL;
    if (rank == coll_world.rank)
        return (void *)p;
    return g && rank >= 0 && rank < coll_world.size ? data_of(g, rank) + offset : NULL;
}

struct coll_shm_region *coll_shm_find(const void *p, size_t bytes, int64_t *id, int64_t *offset)
{
    const char *c = p;
    for (struct coll_shm_region *g = regions; g; g = g->next)
        if (g->map && c >= g->data && bytes <= g->bytes && (size_t)(c - g->data) <= g->bytes - bytes) {
            *id = g->id;
            *offset = (int64_t)(c - g->data);
            return g;
        }
    return NULL;
}

struct done_wait {
    const struct coll_shm_region *g;
    int64_t mark;
};

/* Every rank has finished its slices of the batch whose mark is dw->mark. */
static int all_done(void *arg)
{
    const struct done_wait *dw = arg;
    for (int r = 0; r < coll_world.size; r++)
        if (atomic_load(&head_of(dw->g, r)->done) < dw->mark)
            return 0;
    return 1;
}

int coll_shm_allreduce(struct coll_request **w, size_t k, const struct coll_shm_bell *bell, char *err)
{
    (void)err; /* nothing here can fail: a peer that never finishes is the watchdog's */
    static float tmp[CHUNK] __attribute__((aligned(64))); /* the progress thread's only */
    struct coll_shm_region *g = w[0]->shm;
    const int n = coll_world.size, me = coll_world.rank;
    atomic_thread_fence(memory_order_acquire); /* the peers' gradients, final before they queued them */
    for (size_t i = 0; i < k; i++) {
        const size_t count = (size_t)w[i]->d.count, off = (size_t)w[i]->d.shm_offset;
        const size_t lo = count * (size_t)me / (size_t)n, hi = count * (size_t)(me + 1) / (size_t)n;
        const float divide = w[i]->d.op == COLL_AVERAGE ? (float)n : 0.0f;
        for (size_t c = lo; c < hi; c += CHUNK) {
            const size_t len = hi - c < CHUNK ? hi - c : CHUNK;
            for (int r = 0; r < n; r++)
                g->part[r] = (const float *)(data_of(g, r) + off) + c;
            coll_sum_f32(tmp, g->part, n, len, divide);
            if (w[i]->apply) /* this slice for every rank, straight from L1 */
                w[i]->apply(w[i]->apply_ctx, (float *)w[i]->recv + c, len, tmp, 0, n);
            else
                for (int r = 0; r < n; r++)
                    memcpy((float *)(data_of(g, r) + off) + c, tmp, len * sizeof(float));
        }
    }
    /* Ranks may group granted batches differently (one executes what another received as two grants),
     * so a rank waits for every mark to reach its own, and whoever raises the lowest mark rings. */
    struct done_wait dw = {g, w[k - 1]->seq + 1};
    const int64_t before = atomic_load(&head_of(g, me)->done);
    atomic_store(&head_of(g, me)->done, dw.mark); /* sequentially consistent: see hostctl.c */
    int lowest = 1;
    for (int r = 0; lowest && r < n; r++)
        lowest = r == me || atomic_load(&head_of(g, r)->done) > before;
    if (lowest)
        bell->ring_peers();
    while (!all_done(&dw))
        bell->sleep(NULL, 0, all_done, &dw);
    return COLL_OK;
}
