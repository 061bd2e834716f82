/* batchai-job list, terminate and exec (az batchai job list, job terminate, job node exec).
 *
 * bai_job_control_main(cmd, argc, argv): argv holds the arguments after cmd. Returns the process exit status
 * (exec: the command's, through srun). */
#ifndef BAI_JOB_CONTROL_H
#define BAI_JOB_CONTROL_H

int bai_job_control_main(const char *cmd, int argc, char **argv);

#endif
