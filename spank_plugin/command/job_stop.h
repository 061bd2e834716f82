/* How a job's attempt stopped, from what it wrote for the user in its log directory: Slurm's time-limit
 * warning in its execution logs (the batch script's "attempt N: SIGUSR1: the time limit is near" line, for
 * an x-checkpointable job) and the last checkpoint its main step named in stdout.txt (cifar-train's "Saved
 * checkpoint at P" and "Stopped: checkpoint P; ..."). */
#ifndef BAI_JOB_STOP_H
#define BAI_JOB_STOP_H

#include <limits.h>

struct bai_job_stop {
    char warned_at[64];        /* when the time-limit warning came, "" when it did not */
    char checkpoint[PATH_MAX]; /* the last checkpoint named, "" when none */
};

/* For attempt `attempt` (1 for the first) of the job whose log directory is dir; only regular files are
 * read. */
void bai_job_stop_read(const char *dir, long attempt, struct bai_job_stop *s);

#endif
