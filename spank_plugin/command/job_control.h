/* batchai-job list, terminate and exec (az batchai job list, job terminate, job node exec).
 *
 * bai_job_control_main(cmd, argc, argv): argv holds the arguments after cmd. Returns the process exit status
 * (exec: the command's, through srun). */
#ifndef BAI_JOB_CONTROL_H
#define BAI_JOB_CONTROL_H

int bai_job_control_main(const char *cmd, int argc, char **argv);

/* scancel ID, or with `state` (e.g. "PENDING") only its tasks in that state; Slurm's error said on stderr.
 * 0 when Slurm took it. */
int bai_scancel(const char *id, const char *state);

#endif
