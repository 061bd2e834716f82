/* The environment: COLL_* settings, and what the launcher (mpirun, srun) says about this process. */
#include "env.h"

#include "collective.h"
#include "errors.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A non-negative number from variable `name`, or def when unset or empty. Suffixes K, M, G (powers of
 * 1024) are accepted when `sizes` is set. */
static int env_number(const char *name, double def, int sizes, double *out)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        *out = def;
        return COLL_OK;
    }
    errno = 0;
    char *end;
    double x = strtod(v, &end);
    if (sizes && end != v) {
        switch (*end) {
        case 'k': case 'K': x *= 1024.0; end++; break;
        case 'm': case 'M': x *= 1024.0 * 1024.0; end++; break;
        case 'g': case 'G': x *= 1024.0 * 1024.0 * 1024.0; end++; break;
        }
    }
    if (end == v || *end || errno || !isfinite(x) || x < 0)
        return coll_fail(COLL_ERR_ARG, "libcollective: %s='%s' is not a non-negative %s", name, v,
                         sizes ? "byte count (suffix K, M or G allowed)" : "number");
    *out = x;
    return COLL_OK;
}

/* A 0/1 switch read by env_number. */
static int env_flag(const char *name, int def, int *out)
{
    double v;
    int rc = env_number(name, def, 0, &v);
    if (rc)
        return rc;
    if (v != 0 && v != 1)
        return coll_fail(COLL_ERR_ARG, "libcollective: %s='%s' must be 0 or 1", name, getenv(name));
    *out = (int)v;
    return COLL_OK;
}

/* COLL_HOST_ID: unset means this host's own identity; set, it must be usable as one, so an empty value (a
 * script's unset variable) or one too long to be meant is refused instead of quietly ignored. */
static int env_host_id(char *out)
{
    const char *v = getenv("COLL_HOST_ID");
    if (!v) {
        *out = '\0';
        return COLL_OK;
    }
    if (!*v)
        return coll_fail(COLL_ERR_ARG, "libcollective: COLL_HOST_ID is set but empty; unset it to use this "
                                       "host's name and boot id, or give a name for the host");
    if (strlen(v) > COLL_HOST_ID_MAX)
        return coll_fail(COLL_ERR_ARG, "libcollective: COLL_HOST_ID is %zu bytes long, at most %d are accepted",
                         strlen(v), COLL_HOST_ID_MAX);
    strcpy(out, v);
    return COLL_OK;
}

/* COLL_COMPRESS: none (or unset) or fp16. */
static int env_compress(int *fp16)
{
    const char *v = getenv("COLL_COMPRESS");
    *fp16 = v && !strcmp(v, "fp16");
    if (v && *v && !*fp16 && strcmp(v, "none"))
        return coll_fail(COLL_ERR_ARG, "libcollective: COLL_COMPRESS='%s' must be none or fp16", v);
    return COLL_OK;
}

/* COLL_WIRE_PIECES: auto (or unset), 1 or 0. */
static int env_wire_pieces(int *pieces)
{
    const char *v = getenv("COLL_WIRE_PIECES");
    *pieces = !v || !*v || !strcmp(v, "auto") ? -1 : !strcmp(v, "1") ? 1 : !strcmp(v, "0") ? 0 : -2;
    if (*pieces == -2)
        return coll_fail(COLL_ERR_ARG, "libcollective: COLL_WIRE_PIECES='%s' must be auto, 1 or 0", v);
    return COLL_OK;
}

/* COLL_TIMELINE and COLL_TIMELINE_MAX_MB (timeline.h): read on every rank, used on rank 0. */
static int env_timeline(struct coll_env *env)
{
    const char *v = getenv("COLL_TIMELINE");
    int rc = env_number("COLL_TIMELINE_MAX_MB", 100.0, 0, &env->timeline_max_mb);
    if (rc)
        return rc;
    if (env->timeline_max_mb <= 0)
        return coll_fail(COLL_ERR_ARG, "libcollective: COLL_TIMELINE_MAX_MB='%s' must be more than 0 (MiB)",
                         getenv("COLL_TIMELINE_MAX_MB"));
    if (v && strlen(v) > COLL_TIMELINE_PATH_MAX)
        return coll_fail(COLL_ERR_ARG, "libcollective: COLL_TIMELINE is %zu bytes long, at most %d are accepted",
                         strlen(v), COLL_TIMELINE_PATH_MAX);
    snprintf(env->timeline, sizeof env->timeline, "%s", v ? v : "");
    return COLL_OK;
}

int coll_env_read(struct coll_env *env)
{
    double threshold, direct, cycle_ms;
    int rc;
    if ((rc = env_number("COLL_FUSION_THRESHOLD", 64.0 * 1024 * 1024, 1, &threshold)) ||
        (rc = env_number("COLL_FUSION_DIRECT", 1024.0 * 1024, 1, &direct)) ||
        (rc = env_number("COLL_CYCLE_TIME_MS", 1.0, 0, &cycle_ms)) ||
        (rc = env_number("COLL_STALL_WARNING_SEC", 60.0, 0, &env->stall_warn_sec)) ||
        (rc = env_number("COLL_STALL_ABORT_SEC", COLL_STALL_ABORT_DEFAULT, 0, &env->stall_abort_sec)) ||
        (rc = env_flag("COLL_CHECK", 1, &env->check)) ||
        (rc = env_flag("COLL_MISMATCH_ABORT", 1, &env->mismatch_abort)) ||
        (rc = env_flag("COLL_SHM", 1, &env->shm)) || (rc = env_flag("COLL_HIERARCHICAL", 1, &env->hierarchical)) ||
        (rc = env_compress(&env->compress_fp16)) || (rc = env_wire_pieces(&env->wire_pieces)) ||
        (rc = env_host_id(env->host_id)) ||
        (rc = env_timeline(env)))
        return rc;
    env->fusion_threshold = (size_t)threshold;
    env->fusion_direct = (size_t)direct;
    env->cycle_sec = cycle_ms / 1000.0;
    return COLL_OK;
}

static int env_int(const char *name, long *out)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*end || errno || x < 0)
        return 0;
    *out = x;
    return 1;
}

int coll_launcher_detect(int *launched)
{
    /* Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; srun --mpi=pmix and mpirun set PMIX_RANK; MPICH-style
     * launchers and srun --mpi=pmi2 set PMI_RANK. */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) {
            *launched = 1;
            return COLL_OK;
        }
    *launched = 0;
    /* srun without a PMI plugin starts N independent singletons that would each train alone. */
    long ntasks;
    if (env_int("SLURM_STEP_NUM_TASKS", &ntasks) && ntasks > 1)
        return coll_fail(COLL_ERR_STATE,
                         "libcollective: srun started %ld tasks without PMI (no PMIX_RANK or PMI_RANK in the "
                         "environment), so they cannot find each other; run srun --mpi=pmix",
                         ntasks);
    return COLL_OK;
}

/* Tasks on node `node` from SLURM_STEP_TASKS_PER_NODE, e.g. "2(x3),1": nodes 0-2 have 2, node 3 has 1. */
static int slurm_tasks_on_node(const char *spec, long node, long *out)
{
    const char *p = spec;
    long index = 0;
    while (*p) {
        char *end;
        long tasks = strtol(p, &end, 10), repeat = 1;
        if (end == p || tasks < 0)
            return 0;
        p = end;
        if (*p == '(') {
            if (p[1] != 'x')
                return 0;
            repeat = strtol(p + 2, &end, 10);
            if (end == p + 2 || *end != ')' || repeat < 1)
                return 0;
            p = end + 1;
        }
        if (node < index + repeat) {
            *out = tasks;
            return 1;
        }
        index += repeat;
        if (*p == ',')
            p++;
        else if (*p)
            return 0;
    }
    return 0;
}

int coll_launcher_local(int *local_rank, int *local_size)
{
    long lr, ls, node;
    if (env_int("OMPI_COMM_WORLD_LOCAL_RANK", &lr) && env_int("OMPI_COMM_WORLD_LOCAL_SIZE", &ls)) {
        *local_rank = (int)lr;
        *local_size = (int)ls;
        return 1;
    }
    const char *spec = getenv("SLURM_STEP_TASKS_PER_NODE");
    if (env_int("SLURM_LOCALID", &lr) && env_int("SLURM_NODEID", &node) && spec &&
        slurm_tasks_on_node(spec, node, &ls)) {
        *local_rank = (int)lr;
        *local_size = (int)ls;
        return 1;
    }
    return 0;
}
