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

void bai_partition_fit(const struct bai_plan *plan, struct bai_diag *d)
{
    char *argv[] = {"scontrol", "-o", "show", "partition", NULL};
    char *out = NULL, *err = NULL;
    if (bai_run(argv, &out, &err) != 0 || !out) { /* Slurm cannot be asked here: sbatch answers */
        free(out);
        free(err);
        return;
    }
    const char *line = find_partition(out, plan->partition);
    const char *nodes_path = plan->origin.aml ? "resources.instance_count" : "properties.nodeCount";
    char tasks_path[160];
    if (plan->origin.aml)
        snprintf(tasks_path, sizeof tasks_path, "distribution.process_count_per_instance");
    else if (plan->origin.toolkit && plan->origin.process_count_given)
        snprintf(tasks_path, sizeof tasks_path, "properties.%s.processCount", plan->origin.toolkit);
    else
        snprintf(tasks_path, sizeof tasks_path, "%s", nodes_path);
    if (!line) {
        if (plan->partition)
            bai_diag_add(d, "", "partition \"%s\" does not exist on this cluster (scontrol show partition): ask the "
                         "admins", plan->partition);
        free(out);
        free(err);
        return;
    }
    char name[256] = "";
    part_value(line, "PartitionName", name, sizeof name);
    long total_nodes = part_number(line, "TotalNodes"), max_nodes = part_number(line, "MaxNodes"),
         total_cpus = part_number(line, "TotalCPUs");
    const char *which = plan->partition ? "" : " (the default partition)";
    if (total_nodes >= 0 && plan->nodes > total_nodes)
        bai_diag_add(d, nodes_path, "%d nodes, but partition %s%s has %ld (TotalNodes=%ld): Slurm would never start "
                     "it; ask for at most %ld", plan->nodes, name, which, total_nodes, total_nodes, total_nodes);
    else if (max_nodes >= 0 && plan->nodes > max_nodes)
        bai_diag_add(d, nodes_path, "%d nodes, but partition %s%s lets a job have at most %ld (MaxNodes=%ld): Slurm "
                     "would never start it; ask for at most %ld", plan->nodes, name, which, max_nodes, max_nodes,
                     max_nodes);
    if (total_cpus >= 0 && plan->ntasks > total_cpus)
        bai_diag_add(d, tasks_path, "%d processes, each with a CPU of its own, but partition %s%s has %ld CPUs in all "
                     "(TotalCPUs=%ld on %ld node(s)): Slurm would never start it; ask for at most %ld processes",
                     plan->ntasks, name, which, total_cpus, total_cpus, total_nodes, total_cpus);
    free(out);
    free(err);
}
