/* gpu_grant: whether the launcher gave this process GPUs, read from the variables that say so, so that a
 * job given a GPU it cannot use stops instead of training on the CPU for hours (cli/main.c).
 *
 * A variable gives a GPU when it is
 *   CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL  set by Slurm's gres/gpu for the job and each step (the GPUs'
 *                        local ids); it gives one when its first entry names a device: not empty, not
 *                        Slurm's old "NoDevFiles", not negative (CUDA stops at the first invalid entry, so
 *                        "-1" is the usual way to hide every GPU)
 *   SLURM_STEP_GPUS      the step's GPUs (global ids), when not empty
 *   SLURM_GPUS_ON_NODE   the GPUs allocated on this node, when a positive integer
 *   AZ_BATCHAI_NUM_GPUS  the Batch AI plugin's count for this node, when a positive integer
 * SLURM_JOB_GPUS is left out: a step run with --gres=none inside a GPU job inherits it from the batch
 * script although Slurm gave the step no GPU (Slurm unsets the step's own variables then). */
#ifndef TRAINER_GPU_GRANT_H
#define TRAINER_GPU_GRANT_H

#include <stddef.h>

/* Returns how many of the variables give this process a GPU, and names them with their values in said
 * ("CUDA_VISIBLE_DEVICES=0, SLURM_GPUS_ON_NODE=1"; empty when none), cut to fit len. */
int gpu_grant(char *said, size_t len);

#endif
