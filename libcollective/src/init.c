/* coll_init/coll_finalize and who this process is: MPI when a launcher started us (mpirun, srun
 * --mpi=pmix) or the program initialised MPI itself; a single rank without MPI otherwise. */
#include "api.h"

#include "controller.h"
#include "device.h"
#include "env.h"
#include "errors.h"
#include "fusion.h"
#include "hier.h"
#include "hostctl.h"
#include "mpi_backend.h"
#include "timeline.h"
#include "world.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

struct coll_world coll_world = {
    .rank = -1,
    .size = -1,
    .local_rank = -1,
    .local_size = -1,
    .device = -1,
};

/* Set once we have called MPI_Init_thread: a failed coll_init() leaves MPI initialised (MPI cannot be
 * initialised twice), so that coll_init() can be tried again, e.g. without a device. */
static int we_started_mpi;

static const char *thread_level(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    }
    return "an unknown thread level";
}

static int start_mpi(int launched)
{
    char err[COLL_ERRLEN];
    int up = 0, provided = 0, rc;
    MPI_Initialized(&up);
    if (up) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized)
            return coll_fail(COLL_ERR_STATE, "libcollective: coll_init after MPI_Finalize");
        MPI_Query_thread(&provided);
        coll_world.mpi_owned = we_started_mpi;
    } else if (launched) {
        if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided)) != MPI_SUCCESS)
            return coll_fail(coll_mpi_error(err, "MPI_Init_thread", rc), "%s", err);
        coll_world.mpi_owned = we_started_mpi = 1;
    } else {
        return COLL_OK; /* no launcher: one rank, no MPI */
    }
    coll_world.use_mpi = 1;
    if (provided < MPI_THREAD_SERIALIZED)
        return coll_fail(COLL_ERR_STATE,
                         "libcollective: MPI provides %s but the progress thread needs MPI_THREAD_SERIALIZED "
                         "(or MPI_THREAD_MULTIPLE when the program calls MPI itself)",
                         thread_level(provided));
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &coll_world.data)) != MPI_SUCCESS ||
        (rc = MPI_Comm_dup(MPI_COMM_WORLD, &coll_world.ctrl)) != MPI_SUCCESS)
        return coll_fail(coll_mpi_error(err, "MPI_Comm_dup", rc), "%s", err);
    /* Failures come back as return codes carrying MPI's text instead of aborting inside MPI. */
    MPI_Comm_set_errhandler(coll_world.data, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(coll_world.ctrl, MPI_ERRORS_RETURN);
    MPI_Comm_rank(coll_world.data, &coll_world.rank);
    MPI_Comm_size(coll_world.data, &coll_world.size);
    return COLL_OK;
}

/* Local rank/size: the launcher's word, checked against the ranks MPI finds sharing this node's memory. */
static int find_local(void)
{
    char err[COLL_ERRLEN];
    int lr = 0, ls = 1, have = coll_launcher_local(&lr, &ls);
    if (!coll_world.use_mpi) {
        coll_world.local_rank = 0;
        coll_world.local_size = 1;
        return COLL_OK;
    }
    MPI_Comm node;
    int rc = MPI_Comm_split_type(coll_world.ctrl, MPI_COMM_TYPE_SHARED, coll_world.rank, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS)
        return coll_fail(coll_mpi_error(err, "MPI_Comm_split_type", rc), "%s", err);
    MPI_Comm_rank(node, &coll_world.local_rank);
    MPI_Comm_size(node, &coll_world.local_size);
    MPI_Comm_free(&node);
    if (have && (lr != coll_world.local_rank || ls != coll_world.local_size))
        return coll_fail(COLL_ERR_STATE,
                         "libcollective: rank %d: the launcher says local rank %d of %d, MPI finds local rank %d "
                         "of %d ranks sharing this node",
                         coll_world.rank, lr, ls, coll_world.local_rank, coll_world.local_size);
    return COLL_OK;
}

static void free_comms(void)
{
    if (coll_world.data != MPI_COMM_NULL)
        MPI_Comm_free(&coll_world.data);
    if (coll_world.ctrl != MPI_COMM_NULL)
        MPI_Comm_free(&coll_world.ctrl);
}

static void reset(void)
{
    coll_world.initialised = 0;
    coll_world.rank = coll_world.size = coll_world.local_rank = coll_world.local_size = coll_world.device = -1;
    coll_world.use_mpi = coll_world.mpi_owned = 0;
    coll_ctl.next_seq = 0;
}

int coll_init(const struct coll_init_opts *opts)
{
    if (coll_world.initialised)
        return coll_fail(COLL_ERR_STATE, "libcollective: coll_init called twice");
    int launched = 0, rc;
    reset();
    coll_world.data = coll_world.ctrl = MPI_COMM_NULL;
    coll_world.rank = 0;
    coll_world.size = 1;
    if ((rc = coll_env_read(&coll_world.env)) || (rc = coll_launcher_detect(&launched)) ||
        (rc = start_mpi(launched)) || (rc = find_local()) ||
        (opts && opts->use_device && (rc = coll_device_open())) || (rc = coll_timeline_open()) ||
        (rc = coll_hostctl_open()) ||
        (rc = coll_hier_open((opts && opts->compress_fp16) || coll_world.env.compress_fp16)) ||
        (rc = coll_progress_start())) {
        char err[COLL_ERRLEN];
        snprintf(err, sizeof err, "%s", coll_last_error());
        coll_timeline_close();
        coll_hier_close();
        coll_hostctl_close();
        coll_device_close();
        if (coll_world.use_mpi)
            free_comms();
        reset();
        coll_set_error(err);
        return rc;
    }
    coll_world.initialised = 1;
    return COLL_OK;
}

int coll_finalize(void)
{
    if (!coll_world.initialised)
        return coll_fail(COLL_ERR_STATE, "libcollective: coll_finalize without coll_init");
    /* A checked barrier: a rank still calling collectives then disagrees with this one (and the job
     * aborts) instead of leaving this rank in MPI_Finalize. */
    int rc = coll_world.size > 1 ? coll_finalize_barrier() : COLL_OK;
    int rc_all = coll_wait_all();
    rc = rc ? rc : rc_all;
    coll_progress_stop();
    coll_timeline_close();
    coll_hier_close();
    coll_hostctl_close();
    coll_fusion_release();
    coll_mpi_release();
    coll_device_close();
    if (coll_world.use_mpi) {
        free_comms();
        if (coll_world.mpi_owned)
            MPI_Finalize();
    }
    reset();
    return rc;
}

int coll_rank(void) { return coll_world.rank; }
int coll_size(void) { return coll_world.size; }
int coll_local_rank(void) { return coll_world.local_rank; }
int coll_local_size(void) { return coll_world.local_size; }
int coll_device(void) { return coll_world.device; }
int coll_hosts(void) { return coll_world.initialised ? coll_world.hosts : -1; }
int coll_hierarchical(void) { return coll_world.initialised && coll_world.hier; }
int coll_compressed(void) { return coll_world.initialised && coll_world.compress; }

static double thread_cpu(pthread_t t)
{
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &id) != 0 || clock_gettime(id, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double coll_thread_cpu_seconds(void)
{
    if (!coll_world.initialised || !coll_world.use_mpi)
        return 0;
    return thread_cpu(coll_ctl.thread) + (coll_ctl.watchdog_running ? thread_cpu(coll_ctl.watchdog) : 0);
}
