/* A job's size against its partition's, from slurmctld (see partition_fit.h). */
#include "partition_fit.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm_read.h"

/* The value of " KEY=" in one `scontrol -o show partition` line (values there hold no spaces), into buf. */
static bool part_value(const char *line, const char *key, char *buf, size_t size)
{
    size_t klen = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen)
        if ((p == line || p[-1] == ' ') && p[klen] == '=') {
            p += klen + 1;
            snprintf(buf, size, "%.*s", (int)strcspn(p, " \n"), p);
            return true;
        }
    return false;
}

/* The partition's line: the one named, else the default (Default=YES); NULL when none. Points into out. */
static const char *find_partition(char *out, const char *name)
{
    char value[256];
    for (char *line = out, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!part_value(line, "PartitionName", value, sizeof value))
            continue;
        if (name ? strcmp(value, name) == 0 : part_value(line, "Default", value, sizeof value) &&
                                                  strcmp(value, "YES") == 0)
            return line;
    }
    return NULL;
}

static long part_number(const char *line, const char *key)
{
    char value[64], *end;
    if (!part_value(line, key, value, sizeof value) || !value[0])
        return -1;
    long n = strtol(value, &end, 10);
    return *end ? -1 : n; /* UNLIMITED, N/A: no bound */
}

int bai_partition_read(const char *name, struct bai_partition *p)
{
    char *argv[] = {"scontrol", "-o", "show", "partition", NULL};
    char *out = NULL, *err = NULL;
    int rc = -1;
    memset(p, 0, sizeof *p);
    if (bai_run(argv, &out, &err) == 0 && out) {
        const char *line = find_partition(out, name);
        rc = line ? 0 : 1;
        if (line) {
            part_value(line, "PartitionName", p->name, sizeof p->name);
            p->total_nodes = part_number(line, "TotalNodes");
            p->max_nodes = part_number(line, "MaxNodes");
            p->total_cpus = part_number(line, "TotalCPUs");
        }
    }
    free(out);
    free(err);
    return rc;
}

static bool too_many_nodes(const struct bai_partition *p, long nodes, char *why, size_t size)
{
    if (p->total_nodes >= 0 && nodes > p->total_nodes)
        snprintf(why, size, "%ld nodes, but partition %s has %ld (TotalNodes=%ld)", nodes, p->name, p->total_nodes,
                 p->total_nodes);
    else if (p->max_nodes >= 0 && nodes > p->max_nodes)
        snprintf(why, size, "%ld nodes, but partition %s lets a job have at most %ld (MaxNodes=%ld)", nodes, p->name,
                 p->max_nodes, p->max_nodes);
    else
        return false;
    return true;
}

static bool too_many_tasks(const struct bai_partition *p, long tasks, char *why, size_t size)
{
    if (p->total_cpus < 0 || tasks <= p->total_cpus)
        return false;
    snprintf(why, size, "%ld processes, each with a CPU of its own, but partition %s has %ld CPUs in all "
             "(TotalCPUs=%ld on %ld node(s))", tasks, p->name, p->total_cpus, p->total_cpus, p->total_nodes);
    return true;
}

bool bai_partition_too_small(const struct bai_partition *p, long nodes, long tasks, char *why, size_t size)
{
    return too_many_nodes(p, nodes, why, size) || too_many_tasks(p, tasks, why, size);
}

void bai_partition_fit(const struct bai_plan *plan, struct bai_diag *d)
{
    struct bai_partition p;
    int found = bai_partition_read(plan->partition, &p);
    if (found < 0) /* Slurm cannot be asked here: sbatch answers */
        return;
    if (found > 0) {
        if (plan->partition)
            bai_diag_add(d, "", "partition \"%s\" does not exist on this cluster (scontrol show partition): ask the "
                         "admins", plan->partition);
        return;
    }
    const char *nodes_path = plan->origin.aml ? "resources.instance_count" : "properties.nodeCount";
    char tasks_path[160], why[600];
    if (plan->origin.aml)
        snprintf(tasks_path, sizeof tasks_path, "distribution.process_count_per_instance");
    else if (plan->origin.toolkit && plan->origin.process_count_given)
        snprintf(tasks_path, sizeof tasks_path, "properties.%s.processCount", plan->origin.toolkit);
    else
        snprintf(tasks_path, sizeof tasks_path, "%s", nodes_path);
    if (!plan->partition) { /* named as the job will know it */
        size_t n = strlen(p.name);
        snprintf(p.name + n, sizeof p.name - n, " (the default partition)");
    }
    /* One fault per bound, each at the field that sets it. */
    if (too_many_nodes(&p, plan->nodes, why, sizeof why))
        bai_diag_add(d, nodes_path, "%s: Slurm would never start it; ask for at most %ld", why,
                     p.total_nodes >= 0 && plan->nodes > p.total_nodes ? p.total_nodes : p.max_nodes);
    if (too_many_tasks(&p, plan->ntasks, why, sizeof why))
        bai_diag_add(d, tasks_path, "%s: Slurm would never start it; ask for at most %ld processes", why,
                     p.total_cpus);
}
