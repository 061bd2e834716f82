/* Leaf: settings from the environment, and what the launcher says (env.c). */
#ifndef COLL_ENV_H
#define COLL_ENV_H

#include <stddef.h>

/* A stuck job ends after 10 minutes by default: far above any step, checkpoint or evaluation of a
 * training job (a rank waits in a collective while rank 0 saves), and small against a Slurm time limit
 * (a Batch AI job's default is 7 days). */
#define COLL_STALL_ABORT_DEFAULT 600.0
/* The longest COLL_HOST_ID accepted: a host name (at most 64 bytes) and a boot id (36) fit many times. */
#define COLL_HOST_ID_MAX 255
/* The longest COLL_TIMELINE path accepted (PATH_MAX). */
#define COLL_TIMELINE_PATH_MAX 4095

struct coll_env {
    size_t fusion_threshold; /* COLL_FUSION_THRESHOLD, bytes, 0 = no fusion */
    size_t fusion_direct;    /* COLL_FUSION_DIRECT, bytes: tensors this large are reduced in place, unfused */
    double cycle_sec;        /* COLL_CYCLE_TIME_MS: how long new requests gather before being announced */
    double stall_warn_sec;   /* COLL_STALL_WARNING_SEC, 0 = never */
    double stall_abort_sec;  /* COLL_STALL_ABORT_SEC, 0 = never */
    int check;               /* COLL_CHECK */
    int mismatch_abort;      /* COLL_MISMATCH_ABORT: a detected mismatch aborts the job (1) or fails the call */
    int shm;                 /* COLL_SHM: coll_host_alloc() shares memory between the ranks of one host */
    int hierarchical;        /* COLL_HIERARCHICAL: ranks spread over hosts reduce per host first (hier.c) */
    int compress_fp16;       /* COLL_COMPRESS=fp16: float32 allreduces cross hosts as float16 (hier.h) */
    int wire_pieces;         /* COLL_WIRE_PIECES: -1 auto (across hosts), 1 always, 0 never (mpi_backend.c) */
    /* COLL_HOST_ID: hashed instead of this host's name and boot id into the host key that decides which
     * ranks share a host (shm.c); "" when unset. */
    char host_id[COLL_HOST_ID_MAX + 1];
    char timeline[COLL_TIMELINE_PATH_MAX + 1]; /* COLL_TIMELINE: rank 0's timeline file (timeline.h); "" off */
    double timeline_max_mb;                    /* COLL_TIMELINE_MAX_MB: its size cap */
};

int coll_env_read(struct coll_env *env);                   /* COLL_ERR_ARG naming the variable */
int coll_launcher_detect(int *launched);                   /* launched: started by mpirun/srun with PMI */
int coll_launcher_local(int *local_rank, int *local_size); /* 1 if the launcher told us, else 0 */

#endif
