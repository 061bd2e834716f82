/* The plan's own functions: see batchai_jobfile.h. */
#include "batchai_jobfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"

static char *expand(const char *pattern, char token, const char *value)
{
    struct sbuf b = { 0 };

    for (const char *p = pattern; *p; p++) {
        if (p[0] == '%' && p[1] == token) {
            sb_puts(&b, value);
            p++;
        } else {
            sb_printf(&b, "%c", *p);
        }
    }
    if (!b.s)
        sb_puts(&b, "");
    return sb_finish(&b);
}

char *bai_expand_jobid(const char *pattern, const char *jobid)
{
    return expand(pattern, 'j', jobid);
}

char *bai_expand_node(const char *pattern, const char *node)
{
    return expand(pattern, 'N', node);
}

void bai_format_time(long seconds, char *buf, size_t size)
{
    long days = seconds / 86400, rest = seconds % 86400;

    if (days)
        snprintf(buf, size, "%ld-%02ld:%02ld:%02ld", days, rest / 3600, rest / 60 % 60, rest % 60);
    else
        snprintf(buf, size, "%02ld:%02ld:%02ld", rest / 3600, rest / 60 % 60, rest % 60);
}

bool bai_plan_has_node_steps(const struct bai_plan *plan)
{
    for (size_t i = 0; i < plan->n_mounts; i++)
        if (plan->mounts[i].mount_command)
            return true;
    return plan->prep_command != NULL;
}

void bai_plan_free(struct bai_plan *plan)
{
    for (size_t i = 0; i < plan->n_mounts; i++) {
        free(plan->mounts[i].where);
        free(plan->mounts[i].share);
        free(plan->mounts[i].relative_path);
        free(plan->mounts[i].target);
        free(plan->mounts[i].site_path);
        free(plan->mounts[i].mount_command);
    }
    for (size_t i = 0; i < plan->n_env; i++) {
        if (plan->env[i].secret && plan->env[i].value)
            explicit_bzero(plan->env[i].value, strlen(plan->env[i].value));
        free(plan->env[i].name);
        free(plan->env[i].value);
        free(plan->env[i].where);
    }
    free(plan->mounts); free(plan->env);
    free(plan->job_name); free(plan->partition); free(plan->qos); free(plan->log_dir); free(plan->job_dir); free(plan->job_temp);
    free(plan->container); free(plan->container_arg); free(plan->bundle); free(plan->prep_command); free(plan->main_step);
    free(plan->workdir);
    free(plan->comment);
    free(plan->display_name);
    free(plan->secrets_file);
    free(plan->origin.out_err_prefix); free(plan->origin.cluster_id); free(plan->origin.image);
    free(plan->origin.shm_size); free(plan->origin.gpu_setting); free(plan->gpu_type);
    memset(plan, 0, sizeof *plan);
}
