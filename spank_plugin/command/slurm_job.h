/* One Slurm job as batchai-job's commands see it: from slurmctld (scontrol), else from accounting (sacct),
 * with Batch AI's execution state and whether the plugin made it. */
#ifndef BAI_SLURM_JOB_H
#define BAI_SLURM_JOB_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct bai_jobinfo {
    char id[32];
    char state[64];       /* Slurm's JobState, e.g. RUNNING */
    char reason[256];     /* why it waits or ended ("None" when nothing to say) */
    char name[256];
    char user_id[128];    /* "user(1000)" */
    char nodes[32];       /* NumNodes */
    char cpus[32];        /* NumCPUs */
    char partition[256];
    char node_list[1024];
    char batch_host[256]; /* the node that ran the batch script */
    char exit_code[32];   /* "N:S" */
    char restarts[32];    /* the attempt is restarts + 1 */
    char submit_time[32], start_time[32], end_time[32], run_time[32];
    char comment[1024];
    char work_dir[PATH_MAX]; /* the submit directory */
    char stdout_path[PATH_MAX];
    char own_script_logs[PATH_MAX]; /* a job with a script of the user's own: its log directory, from the line
                                     * its batch step wrote to its output (BAI_OWN_SCRIPT_LINE); else "" */
    bool from_accounting; /* slurmctld had forgotten it */
};

/* Fill ji for job id. Returns 0, or -1 with a message for the user in why (never a job Slurm does not know
 * about without saying which source said so). */
int bai_job_load(const char *id, struct bai_jobinfo *ji, char *why, size_t why_size);

/* Every job slurmctld holds for uid (one struct each, malloc'ed), newest first; -1 with why when scontrol
 * fails. */
int bai_job_list_user(unsigned uid, struct bai_jobinfo **jobs, size_t *n, char *why, size_t why_size);

/* Whether the plugin made the job: its StdOut is Batch AI's ".../<job id>/stdouterr/stdout.txt", or, with a
 * script of the user's own, its output says where its Batch AI logs are (own_script_logs). */
bool bai_job_is_batchai(const struct bai_jobinfo *ji);
/* The log directory (the StdOut's directory, or own_script_logs) into dir; false when the job has none. */
bool bai_job_log_dir(const struct bai_jobinfo *ji, char *dir, size_t size);

/* batchai-job terminate's mark in the job's comment: the time it asked the job's steps to stop. */
#define BAI_TERMINATED_TAG "batchai-terminated="

/* Batch AI's executionState for the job: queued, running, terminating (also a running job batchai-job
 * terminate has marked), succeeded, failed, terminated (ended after that mark, whatever its Slurm state), or
 * cancelled (a job cancelled before it ever ran). */
const char *bai_job_execution_state(const struct bai_jobinfo *ji);
bool bai_job_ended(const struct bai_jobinfo *ji);
/* The job's exit status as a process's: the code of "N:S", else 128 + S; -1 while it has none. */
int bai_job_exit_status(const struct bai_jobinfo *ji);
/* The time batchai-job terminate marked the job with (BAI_TERMINATED_TAG), or "". */
const char *bai_job_terminated_at(const struct bai_jobinfo *ji, char *buf, size_t size);
/* The experiment recorded in the job's comment ("batchai-experiment=NAME"), or "". */
const char *bai_job_experiment(const struct bai_jobinfo *ji, char *buf, size_t size);

#endif
