/* Leaf: which GPU a rank takes (device_choice.c), a rule with no MPI and no CUDA in it. */
#ifndef COLL_DEVICE_CHOICE_H
#define COLL_DEVICE_CHOICE_H

#include <stdint.h>

/* The ordinal a rank takes among the `visible` GPUs CUDA shows it (after CUDA_VISIBLE_DEVICES), -1 when it
 * sees none. Where Slurm binds GPUs to tasks (--gpus-per-task, --gpu-bind), each task sees only its own,
 * renumbered from 0: with one each, every rank takes 0; with k each, rank r takes r mod k, a different one
 * for each of the tasks that could share a set of k. Where every task sees the node's GPUs, the local rank
 * picks, as Horovod does; more ranks than GPUs would put two on one GPU, which NCCL refuses when it builds
 * the communicator. */
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

#endif
