/* batchai-job check-site: an admin's check that a partition can run Batch AI jobs, node by node.
 *
 * On the host it runs on, it reads Slurm's configuration (scontrol show config) and the plugstack line of
 * spank_batchai.so (following includes as slurmd does), then runs one real Batch AI job step on every node
 * of the partition: `srun --batchai-job=<probe job file> batchai-job check-node ...`. That step goes through
 * the whole path a job takes (prolog, job_root, the task context), and check-node reports from inside it
 * whether the plugin prepared that node, the release it was built for, job_root's ownership from /, job_temp
 * by the prolog's rule (and, as a warning, whether it is node-local) and the container runtime. Output: one line per check, "ok", "warn" or "FAIL" first; exit 0 when nothing failed,
 * 1 otherwise, 2 on a usage error. Manual: spank_batchai(8). */
#ifndef BAI_CHECK_SITE_H
#define BAI_CHECK_SITE_H

/* check-site [-p PARTITION] [-d DIR]: DIR (default: the current directory) holds the probe job file for
 * the time of the check; every node must see it at the same path, as they see users' job files. */
int bai_check_site_main(const char *self, int argc, char **argv);

/* check-node JOB_ROOT JOB_TEMP RUNTIME IMAGE_ROOT: run by check-site in each task of its probe step. */
int bai_check_node_main(int argc, char **argv);

#endif
