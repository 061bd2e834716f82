/* Which environments give cifar-train a GPU (gpu_grant, trainer/src/cli/gpu_grant.h): what Slurm's gres/gpu
 * and the Batch AI plugin set, and the ways a job says it has none. */
#include <stdlib.h>
#include <string.h>

#include "cli/gpu_grant.h"

#include "../check.h"

static const char *const names[] = {"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "SLURM_STEP_GPUS",
                                    "SLURM_GPUS_ON_NODE", "AZ_BATCHAI_NUM_GPUS", "SLURM_JOB_GPUS"};

/* Sets exactly the NAME=VALUE pairs in env (NULL-terminated), the other variables unset. */
static void environment(const char *const *env)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);
    for (; *env; env++) {
        char pair[128];
        snprintf(pair, sizeof pair, "%s", *env);
        char *eq = strchr(pair, '=');
        *eq = '\0';
        setenv(pair, eq + 1, 1);
    }
}

/* The grant of env must count n variables and name them as said. */
static void expect(const char *const *env, int n, const char *said)
{
    char got[256];
    environment(env);
    int k = gpu_grant(got, sizeof got);
    if (k != n || strcmp(got, said) != 0)
        fprintf(stderr, "%s...: %d '%s', want %d '%s'\n", env[0] ? env[0] : "(none)", k, got, n, said);
    CHECK(k == n);
    CHECK_STR(got, said);
}

#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})

int main(void)
{
    /* Slurm's step with --gpus-per-task=1 on a node of several GPUs. */
    expect(ENV("CUDA_VISIBLE_DEVICES=1", "GPU_DEVICE_ORDINAL=1", "SLURM_STEP_GPUS=1", "SLURM_GPUS_ON_NODE=1"), 4,
           "CUDA_VISIBLE_DEVICES=1, GPU_DEVICE_ORDINAL=1, SLURM_STEP_GPUS=1, SLURM_GPUS_ON_NODE=1");
    /* Each alone is enough. */
    expect(ENV("CUDA_VISIBLE_DEVICES=0"), 1, "CUDA_VISIBLE_DEVICES=0");
    expect(ENV("CUDA_VISIBLE_DEVICES=GPU-5f3c1e2a"), 1, "CUDA_VISIBLE_DEVICES=GPU-5f3c1e2a");
    expect(ENV("GPU_DEVICE_ORDINAL=0,1"), 1, "GPU_DEVICE_ORDINAL=0,1");
    expect(ENV("SLURM_STEP_GPUS=2,3"), 1, "SLURM_STEP_GPUS=2,3");
    expect(ENV("SLURM_GPUS_ON_NODE=1"), 1, "SLURM_GPUS_ON_NODE=1");
    expect(ENV("AZ_BATCHAI_NUM_GPUS=4"), 1, "AZ_BATCHAI_NUM_GPUS=4");
    /* No GPU: nothing set, the ways of hiding every GPU, zero counts, words that are not counts. */
    expect(ENV(NULL), 0, "");
    expect(ENV("CUDA_VISIBLE_DEVICES="), 0, "");
    expect(ENV("CUDA_VISIBLE_DEVICES=-1"), 0, "");
    expect(ENV("CUDA_VISIBLE_DEVICES=NoDevFiles"), 0, "");
    expect(ENV("CUDA_VISIBLE_DEVICES=,0"), 0, "");
    expect(ENV("SLURM_STEP_GPUS="), 0, "");
    expect(ENV("SLURM_GPUS_ON_NODE=0"), 0, "");
    expect(ENV("AZ_BATCHAI_NUM_GPUS=0"), 0, "");
    expect(ENV("AZ_BATCHAI_NUM_GPUS=-2"), 0, "");
    expect(ENV("AZ_BATCHAI_NUM_GPUS=one"), 0, "");
    expect(ENV("AZ_BATCHAI_NUM_GPUS=1x"), 0, "");
    /* A step run with --gres=none inside a GPU job keeps only the job's list: no GPU for this step. */
    expect(ENV("SLURM_JOB_GPUS=0,1"), 0, "");
    /* A short buffer gets a cut, terminated list and the full count. */
    char small[12];
    environment(ENV("CUDA_VISIBLE_DEVICES=0", "SLURM_GPUS_ON_NODE=1"));
    CHECK(gpu_grant(small, sizeof small) == 2);
    CHECK_STR(small, "CUDA_VISIBL");
    return check_exit("test_gpu_grant");
}
