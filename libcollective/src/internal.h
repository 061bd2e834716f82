/* Internal contract between the files of libcollective (not installed).
 *
 * Data flow: the public calls (queue.c) turn every collective into a request with a sequence number and
 * queue it. The progress thread (progress.c) announces new requests to rank 0, whose coordinator
 * (coordinator.c, with check.c and stall.c) grants a sequence number once every rank has reached it; when
 * every rank shares one host they announce into a node-shared control block instead (hostctl.c) and each
 * runs the coordinator itself. The granted requests are grouped and run (fusion.c) through the backend of
 * their memory (backend.h): MPI for host memory (mpi_backend.c), NCCL for device memory (device.c loads
 * the plugin built from nccl_backend.c). An in-place float32 allreduce on memory from coll_host_alloc()
 * with every rank on one host skips MPI: shm.c sums it straight out of the ranks' shared segments. Only
 * the progress thread calls MPI after coll_init(). With COLL_TIMELINE, fusion.c hands each collective's
 * moments to timeline.c (a leaf, timeline.h), and the progress thread carries the other ranks' to rank 0.
 */
#ifndef COLL_INTERNAL_H
#define COLL_INTERNAL_H

#include "collective.h"

#include <mpi.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "nccl_plugin.h"

#define COLL_ERRLEN COLL_BACKEND_ERRLEN /* every message buffer, the backends' included */
/* A stuck job ends after 10 minutes by default: far above any step, checkpoint or evaluation of a
 * training job (a rank waits in a collective while rank 0 saves), and small against a Slurm time limit
 * (a Batch AI job's default is 7 days). */
#define COLL_STALL_ABORT_DEFAULT 600.0
/* The longest COLL_HOST_ID accepted: a host name (at most 64 bytes) and a boot id (36) fit many times. */
#define COLL_HOST_ID_MAX 255
/* The longest COLL_TIMELINE path accepted (PATH_MAX). */
#define COLL_TIMELINE_PATH_MAX 4095

/* COLL_KIND_FINALIZE is the barrier coll_finalize() runs: a rank that finalizes while another still
 * calls collectives is then a mismatch (which aborts) instead of a hang in MPI_Finalize. */
enum coll_kind { COLL_KIND_ALLREDUCE, COLL_KIND_BROADCAST, COLL_KIND_ALLGATHER, COLL_KIND_BARRIER, COLL_KIND_FINALIZE };

/* What every rank must agree on for one collective; this is what the coordinator compares. shm_region is
 * the node-shared region (shm.c) that holds an in-place float32 allreduce's buffer on this rank (its id +
 * 1; 0: none), shm_offset the buffer's byte offset in it: the reduction reads the peers' copies at that
 * offset, so every rank must name the same place. apply is 1 for coll_allreduce_apply_async: on one host
 * its reduced values go to the program's function instead of into every rank's buffer, so a rank that
 * asked for a plain allreduce there would never see them. */
struct coll_desc {
    int64_t kind, count, dtype, op, root, device, shm_region, shm_offset, apply;
};
#define COLL_DESC_WORDS 9

struct coll_request {
    int64_t seq;
    struct coll_desc d;
    const void *send;
    void *recv;
    double queued_at;     /* coll_now() when the program queued it (the watchdog's clock) */
    double granted_at;    /* with the timeline on: when this rank's progress thread saw it granted */
    double running_since; /* set under coll_g.lock while its backend call runs; 0 before */
    int done;   /* set under coll_g.lock by the progress thread */
    int status; /* COLL_OK or the failure */
    char error[COLL_ERRLEN];
    struct coll_shm_region *shm; /* d.shm_region's region on this rank, or NULL */
    coll_apply_fn apply;         /* d.apply: coll_allreduce_apply_async's function and its context */
    void *apply_ctx;
    int cut_after; /* one host: a fused group ends here, on every rank alike (coll_coord_cut) */
    struct coll_request *pending_next;          /* FIFO of requests the progress thread has not taken */
    struct coll_request *live_prev, *live_next; /* every request not yet freed by a wait */
};

/* Settings from the environment (env.c). */
struct coll_env {
    size_t fusion_threshold; /* COLL_FUSION_THRESHOLD, bytes, 0 = no fusion */
    size_t fusion_direct;    /* COLL_FUSION_DIRECT, bytes: tensors this large are reduced in place, unfused */
    double cycle_sec;        /* COLL_CYCLE_TIME_MS: how long new requests gather before being announced */
    double stall_warn_sec;   /* COLL_STALL_WARNING_SEC, 0 = never */
    double stall_abort_sec;  /* COLL_STALL_ABORT_SEC, 0 = never */
    int check;               /* COLL_CHECK */
    int mismatch_abort;      /* COLL_MISMATCH_ABORT: a detected mismatch aborts the job (1) or fails the call */
    int shm;                 /* COLL_SHM: coll_host_alloc() shares memory between the ranks of one host */
    /* COLL_HOST_ID: hashed instead of this host's name and boot id into the host key that decides which
     * ranks share a host (shm.c); "" when unset. */
    char host_id[COLL_HOST_ID_MAX + 1];
    char timeline[COLL_TIMELINE_PATH_MAX + 1]; /* COLL_TIMELINE: rank 0's timeline file (timeline.h); "" off */
    double timeline_max_mb;                    /* COLL_TIMELINE_MAX_MB: its size cap */
};

struct coll_state {
    int initialised;
    int rank, size, local_rank, local_size, device;
    int use_mpi;   /* 0: single process without a launcher, no MPI at all */
    /* Every rank shares this host and the control block (hostctl.c) is mapped: the ranks coordinate
     * through it instead of MPI messages, and coll_host_alloc() shares memory. */
    int host_shared;
    int mpi_owned; /* we called MPI_Init_thread, so we call MPI_Finalize */
    int timeline;  /* COLL_TIMELINE is on (rank 0's setting): every rank records its collectives' phases */
    MPI_Comm data; /* collectives */
    MPI_Comm ctrl; /* coordinator messages, so they never match a collective's */
    struct coll_env env;
    const struct coll_nccl_plugin *nccl; /* non-NULL when initialised with a device */

    pthread_mutex_t lock;
    pthread_cond_t work_cv; /* progress thread: new requests, flush, stop */
    pthread_cond_t done_cv; /* waiters: a request completed */
    struct coll_request *pending_head, *pending_tail;
    struct coll_request *live_head, *live_tail;
    int64_t next_seq; /* sequence number of the next request */
    int flush;        /* a waiter wants the queued requests announced now */
    /* The progress thread holds requests it has not announced, and will take every queued request and
     * announce them all at its cycle deadline: a new request need not wake it (each wake-up costs the
     * core a compute thread needs). */
    int cycle_pending;
    int stop;
    pthread_t thread;

    /* Rank 0's coordinator publishes here (under lock) the oldest collective that some rank has not
     * announced, for the watchdog thread, which cannot read the coordinator itself. */
    int64_t late_seq; /* -1: none */
    struct coll_desc late_desc;
    double late_since;    /* when the first rank announced it */
    char late_ranks[400]; /* "rank 2" or "ranks 1, 3" */
    pthread_t watchdog;
    int watchdog_running;
    pthread_cond_t watchdog_cv; /* wakes the watchdog to stop */
};
extern struct coll_state coll_g;

/* errors.c: the calling thread's last error. coll_fail formats it and returns status. */
int coll_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void coll_set_error(const char *text);
const char *coll_dtype_name(int64_t dtype);
const char *coll_op_name(int64_t op);
const char *coll_kind_name(int64_t kind);
double coll_now(void); /* monotonic seconds */

/* env.c */
int coll_env_read(struct coll_env *env);                      /* COLL_ERR_ARG naming the variable */
int coll_launcher_detect(int *launched);                      /* launched: started by mpirun/srun with PMI */
int coll_launcher_local(int *local_rank, int *local_size); /* 1 if the launcher told us, else 0 */

/* mpi_backend.c: the host-memory backend on coll_g.data (backend.h). err gets the MPI message on failure. */
extern const struct coll_backend coll_mpi_backend;
int coll_mpi_error(char *err, const char *call, int rc);
int coll_mpi_barrier(char *err); /* barriers carry no data: MPI runs them whatever the memory */
/* own[k] = part[0][k] + part[1][k] + ... + part[n-1][k] for k < len, added in rank order, then divided by
 * `divide` unless it is 0: the one float32 reduction both paths use, so they agree to the bit. part[0] or
 * part[1] may be own itself (each element is read before it is written); a later one may not. */
void coll_sum_f32(float *own, const float *const *part, int n, size_t len, float divide);
void coll_mpi_release(void);     /* frees the reduction scratch */

/* device.c: loads the NCCL plugin and answers whether a pointer is device memory. */
int coll_device_open(void); /* after rank/size/local rank are known; sets coll_g.nccl and coll_g.device */
/* device_choice.c: the ordinal a rank takes among the `visible` GPUs CUDA shows it (after
 * CUDA_VISIBLE_DEVICES), -1 when it sees none. Where Slurm binds GPUs to tasks (--gpus-per-task,
 * --gpu-bind), each task sees only its own, renumbered from 0: with one each, every rank takes 0; with k
 * each, rank r takes r mod k, a different one for each of the tasks that could share a set of k. Where
 * every task sees the node's GPUs, the local rank picks, as Horovod does; more ranks than GPUs would put two
 * on one GPU, which NCCL refuses when it builds the communicator. */
int coll_device_choice(int visible, int local_rank);

/* One local rank's pick, as the node's ranks exchange it: the ordinal, and a digest of its numbering, the
 * rank's CUDA_VISIBLE_DEVICES (coll_visible_digest; Slurm gives tasks bound to GPUs different ones). */
struct coll_gpu_pick {
    int64_t device; /* -1: none */
    uint64_t visible;
};
uint64_t coll_visible_digest(const char *cuda_visible_devices); /* NULL: unset */
/* Whether two of the n picks of one node's ranks are the same GPU: the same ordinal in the same
 * numbering. Returns 1 with the first such local ranks in *a < *b, else 0. Tasks that see different
 * sets are not compared: their ordinals name different GPUs. */
int coll_device_shared(const struct coll_gpu_pick *picks, int n, int *a, int *b);
void coll_device_close(void);
int coll_is_device_ptr(const void *p);

/* fusion.c: runs the granted requests w[0..n) in order, fusing allreduces; completes each one. An apply
 * request reduced there (not in node-shared memory) gets its whole buffer handed to its function. */
void coll_fusion_run(struct coll_request **w, size_t n);
void coll_fusion_release(void);

/* shm.c: node-shared memory (coll_host_alloc). coll_shm_find gives the region holding [p, p + bytes) and
 * its offset there, or NULL; coll_shm_allreduce runs the in-place float32 allreduces w[0..k), all in one
 * region, on the progress thread: each rank sums its slice of every tensor out of all ranks' segments
 * into all of them (an apply request: into its function), then waits until every rank has done its
 * slices. */
struct coll_shm_region;
struct coll_shm_region *coll_shm_find(const void *p, size_t bytes, int64_t *id, int64_t *offset);
/* coll_init's control block: `bytes` per rank, shared when every rank has rank 0's host key and none set
 * COLL_SHM=0 (*out NULL when not; a rank that cannot map it says why on stderr). Calls MPI itself, before the progress thread
 * runs. coll_shm_rank_data gives rank r's part of a shared region as mapped here. */
int coll_shm_block(size_t bytes, struct coll_shm_region **out);
void coll_shm_block_free(struct coll_shm_region *g);
void *coll_shm_rank_data(const struct coll_shm_region *g, int r);
int coll_shm_allreduce(struct coll_request **w, size_t k, char *err);

/* hostctl.c: the control block of ranks that share a host. coll_hostctl_open (coll_init, before the
 * progress thread, collective) maps it when every rank has rank 0's host key and no rank set COLL_SHM=0, and
 * sets coll_g.host_shared; otherwise, or when a rank cannot map it (said on stderr), it returns COLL_OK
 * without it. The rest is the progress thread's: announce publishes requests w[0..n) (consecutive seqs)
 * and returns how many fit in the log; arrive feeds every rank's new announcements to the coordinator
 * (1: some came, -1: bookkeeping failed); news says whether any rank announced what arrive has not fed;
 * granted publishes that seqs below upto are granted here. sleep sleeps the progress thread until its bell
 * rings or `until` passes (coll_now's clock, 0: no limit), unless ready(arg) holds already; with `held`
 * (locked by the caller) it sleeps without it. ring_self rings this rank's bell (any thread); ring_peers
 * every other rank's that sleeps. */
int coll_hostctl_open(void);
void coll_hostctl_close(void);
size_t coll_hostctl_announce(struct coll_request *const *w, size_t n);
struct coll_coord;
int coll_hostctl_arrive(struct coll_coord *c);
int coll_hostctl_news(void *unused);
void coll_hostctl_granted(int64_t upto);
void coll_hostctl_sleep(pthread_mutex_t *held, double until, int (*ready)(void *), void *arg);
void coll_hostctl_ring_self(void);
void coll_hostctl_ring_peers(void);
/* With the timeline on, each rank's part ends in a ring of its timeline records (timeline.h): times_put
 * moves this rank's records there (not rank 0), times_take hands every other rank's to the timeline
 * (rank 0). */
void coll_hostctl_times_put(void);
void coll_hostctl_times_take(void);

/* queue.c: the progress thread marks a request done (under the lock) and wakes its waiters. */
void coll_complete(struct coll_request *r, int status, const char *error);
int coll_finalize_barrier(void); /* the COLL_KIND_FINALIZE barrier of coll_finalize() */

/* progress.c */
/* pthread_create with every signal blocked in the new thread: the application's handlers (a trainer's
 * SIGTERM, say) run in the application's threads, never in the library's in the middle of MPI. */
int coll_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);
int coll_progress_start(void);
/* Sleeps the next of a growing series of short naps (*nap: 0 to start the series); coll_nap_next only
 * advances it and returns the nap in seconds. How libcollective waits for MPI without spinning. */
void coll_nap(double *nap);
double coll_nap_next(double *nap);
void coll_progress_stop(void);
/* Wakes the progress thread for a new request, a flush or a stop; with coll_g.lock held. */
void coll_progress_wake_locked(void);

/* coordinator.c: the view of who reached which sequence number (rank 0's under MPI, every rank's on one
 * host). */
struct coll_coord;
struct coll_coord *coll_coord_new(int size);
void coll_coord_free(struct coll_coord *c);
/* Rank `rank` announced requests first .. first+n-1 with descriptors d[0..n). */
int coll_coord_arrive(struct coll_coord *c, int rank, int64_t first, int64_t n, const struct coll_desc *d);
int64_t coll_coord_grantable(const struct coll_coord *c); /* every rank has announced all seqs below it */
/* Mismatch text of seq (NULL when it agreed); valid for seqs not yet released. */
const char *coll_coord_mismatch(const struct coll_coord *c, int64_t seq);
/* Some rank's announcement ended at seq (hostctl.c): a fused group must not run past it. */
void coll_coord_cut(struct coll_coord *c, int64_t seq);
int coll_coord_is_cut(const struct coll_coord *c, int64_t seq);
void coll_coord_release(struct coll_coord *c, int64_t upto); /* seqs below upto are granted */
/* Publishes the oldest collective that some rank has not announced into coll_g.late_* (takes the lock). */
void coll_coord_publish_late(const struct coll_coord *c);

/* check.c: compares two descriptors; writes what differs into msg (returns 1) or returns 0. */
int coll_check_differs(const struct coll_desc *a, int rank_a, const struct coll_desc *b, int rank_b,
                       int64_t seq, char *msg, size_t len);
void coll_desc_format(const struct coll_desc *d, char *buf, size_t len);

/* stall.c: "rank 2" or "ranks 1, 3": the ranks r with ready[r] <= seq; returns how many. */
int coll_stall_ranks(int64_t seq, const int64_t *ready, int size, char *buf, size_t len);

/* watchdog.c: a thread of its own that ends a job stuck in a collective, whatever the progress thread is
 * doing (waiting for a grant, or blocked inside MPI or NCCL). */
int coll_watchdog_start(void);
void coll_watchdog_stop(void);
/* Prints the line (prefixed "libcollective: ", naming this rank) and aborts the whole job: NCCL's
 * communicator first, then MPI_Abort. Any thread may call it. */
void coll_abort_job(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
