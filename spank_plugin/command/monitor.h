/* Monitoring of submitted jobs for batchai-job, as the Batch AI tutorial does with `az batchai job show`,
 * `job file list` and `job file stream`.
 *
 * bai_monitor_main(cmd, argc, argv): cmd is "status", "files" or "stream"; argv holds the arguments after it
 * (JOBID [FILE]). Returns the process exit status: 0 success, 1 failure (message on stderr), 2 usage. */
#ifndef BAI_MONITOR_H
#define BAI_MONITOR_H

int bai_monitor_main(const char *cmd, int argc, char **argv);

#endif
