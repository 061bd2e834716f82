/* Whether the launcher gave this process GPUs: see gpu_grant.h. */
#include "cli/gpu_grant.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum rule { NAMES_A_DEVICE, NOT_EMPTY, POSITIVE };

static int gives(const char *v, enum rule rule)
{
    char *end;
    long n;
    switch (rule) {
    case NAMES_A_DEVICE:
        return *v && *v != ',' && *v != '-' && strcmp(v, "NoDevFiles") != 0;
    case NOT_EMPTY:
        return *v != '\0';
    case POSITIVE:
        errno = 0;
        n = strtol(v, &end, 10);
        return !errno && end != v && !*end && n > 0;
    }
    return 0;
}

int gpu_grant(char *said, size_t len)
{
    static const struct {
        const char *name;
        enum rule rule;
    } vars[] = {
        {"CUDA_VISIBLE_DEVICES", NAMES_A_DEVICE}, {"GPU_DEVICE_ORDINAL", NAMES_A_DEVICE},
        {"SLURM_STEP_GPUS", NOT_EMPTY},           {"SLURM_GPUS_ON_NODE", POSITIVE},
        {"AZ_BATCHAI_NUM_GPUS", POSITIVE},
    };
    int n = 0;
    size_t used = 0;
    if (len)
        said[0] = '\0';
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i].name);
        if (!v || !gives(v, vars[i].rule))
            continue;
        if (used < len) {
            int w = snprintf(said + used, len - used, "%s%s=%s", n ? ", " : "", vars[i].name, v);
            used = w < 0 ? len : used + (size_t)w;
        }
        n++;
    }
    return n;
}
