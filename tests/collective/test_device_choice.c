/* The GPU each rank takes (coll_device_choice, libcollective/src/device_choice.h), for the ways Slurm hands
 * GPUs to tasks: the count is what CUDA shows a task after its CUDA_VISIBLE_DEVICES, the local rank is
 * SLURM_LOCALID. Each row says which rank on a node sees what, and every rank of the node is checked.
 * Then whether two ranks of a node would share a GPU (coll_device_shared), which coll_init refuses. */
#include "device_choice.h"

#include "../check.h"

struct node {
    const char *layout; /* the Slurm request and what each task's CUDA_VISIBLE_DEVICES holds */
    int tasks;          /* ranks on the node */
    int visible;        /* GPUs each task sees */
    int want[8];        /* the ordinal each local rank must take, among those it sees */
};

static const struct node nodes[] = {
    /* --gpus-per-task=1: every task sees its one GPU as ordinal 0. */
    {"--gpus-per-task=1, 4 tasks: 0 | 1 | 2 | 3", 4, 1, {0, 0, 0, 0}},
    {"--gpus-per-task=1, 1 task: 3", 1, 1, {0}},
    /* --gpus-per-task=2: each task sees its own two, renumbered 0 and 1; no two of a set collide. */
    {"--gpus-per-task=2, 3 tasks: 0,1 | 2,3 | 4,5", 3, 2, {0, 1, 0}},
    /* --gpus-per-node=4 without binding: every task sees all four, the local rank picks. */
    {"--gpus-per-node=4, 4 tasks: 0,1,2,3 each", 4, 4, {0, 1, 2, 3}},
    {"--gpus-per-node=2, 2 tasks: 0,1 each", 2, 2, {0, 1}},
    /* A rank past the GPUs wraps around (then two ranks share one: NCCL refuses that). */
    {"--gpus-per-node=2, 3 tasks: 0,1 each", 3, 2, {0, 1, 0}},
};

int main(void)
{
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        for (int r = 0; r < nodes[i].tasks; r++) {
            int got = coll_device_choice(nodes[i].visible, r);
            if (got != nodes[i].want[r])
                fprintf(stderr, "%s: local rank %d takes %d, want %d\n", nodes[i].layout, r, got, nodes[i].want[r]);
            CHECK(got == nodes[i].want[r]);
        }
    /* No GPU (no --gres, CUDA_VISIBLE_DEVICES unset or "-1", or no driver): no ordinal at all. */
    for (int r = 0; r < 3; r++)
        CHECK(coll_device_choice(0, r) == -1);
    CHECK(coll_device_choice(-1, 0) == -1);
    /* A local rank not known yet is not a GPU's. */
    CHECK(coll_device_choice(2, -1) == -1);

    /* Two local ranks on one GPU: the same pick in the same numbering, whatever the other ranks do. */
    struct coll_gpu_pick unbound[3], bound[3], unset[3];
    for (int r = 0; r < 3; r++) {
        unbound[r] = (struct coll_gpu_pick){coll_device_choice(2, r), coll_visible_digest("0,1")};
        unset[r] = (struct coll_gpu_pick){coll_device_choice(4, r), coll_visible_digest(NULL)};
    }
    /* --gpus-per-task=1: every rank takes ordinal 0, each of its own GPU. */
    bound[0] = (struct coll_gpu_pick){0, coll_visible_digest("0")};
    bound[1] = (struct coll_gpu_pick){0, coll_visible_digest("1")};
    bound[2] = (struct coll_gpu_pick){0, coll_visible_digest("2")};
    int a = -1, b = -1;
    CHECK(coll_device_shared(unbound, 3, &a, &b) == 1 && a == 0 && b == 2); /* 3 ranks, 2 GPUs: 0 and 2 */
    CHECK(coll_device_shared(unbound, 2, &a, &b) == 0);                     /* 2 ranks, 2 GPUs */
    CHECK(coll_device_shared(bound, 3, &a, &b) == 0);
    CHECK(coll_device_shared(unset, 3, &a, &b) == 0); /* no launcher binding, 4 GPUs, 3 ranks */
    struct coll_gpu_pick none[2] = {{-1, coll_visible_digest("")}, {-1, coll_visible_digest("")}};
    CHECK(coll_device_shared(none, 2, &a, &b) == 0); /* no GPU is not one GPU */
    /* The digest tells the numberings apart: unset from every list, lists from each other. */
    CHECK(coll_visible_digest("0,1") == coll_visible_digest("0,1"));
    CHECK(coll_visible_digest("0,1") != coll_visible_digest("1,0"));
    CHECK(coll_visible_digest("0,1,2,3") != coll_visible_digest(NULL));
    CHECK(coll_visible_digest("-") != coll_visible_digest(NULL));
    CHECK(coll_visible_digest("") != coll_visible_digest(NULL));
    return check_exit("test_device_choice");
}
