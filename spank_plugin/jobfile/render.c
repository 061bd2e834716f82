/* The batch script rendered from a plan: see batchai_jobfile.h.
 * "%j" patterns become ${SLURM_JOB_ID} in shell text and stay "%j" in #SBATCH lines, where sbatch expands
 * them itself. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batchai_jobfile.h"
#include "sbuf.h"
#include "steps.h"

/* The header's line that names the job's container, for the reader of the script. */
#define CONTAINER_LINE "Container: image \""
#define CONTAINER_RUNS "\" runs as srun "

/* The why of bai_node_check's message, once per script: srun passes the exported variable on to every step's
 * tasks, also on a node without the plugin, and into a container. */
static void render_unprepared(struct sbuf *b)
{
    sb_puts(b, BAI_UNPREPARED_VAR "='was not prepared by the spank_batchai plugin, so nothing runs there. Likely causes: "
               "the plugin is not in the plugstack of that node (configless: an include of a plugstack.conf.d "
               "directory is not shipped, and an absolute PlugStackConfig path must exist on the node), or it is "
               "missing there or built for another Slurm release (an admin can run: batchai-job check-site)'\n"
               "export " BAI_UNPREPARED_VAR "\n");
}

/* A "%j"-pattern as shell text: %j -> ${SLURM_JOB_ID}; everything else is safe (checked by translate). */
static void sb_shell_pattern(struct sbuf *b, const char *pattern)
{
    char *s = bai_expand_jobid(pattern, "${SLURM_JOB_ID}");

    if (!s) {
        b->failed = true;
        return;
    }
    sb_puts(b, s);
    free(s);
}

/* The origin of the --open-mode line, the same for both job formats. */
#define OPEN_MODE_ORIGIN "#   --open-mode  a requeued job appends: each attempt's output is kept, after its header line\n"

/* Where the GPU request comes from and what each rank gets. */
/* The lines of a checkpointable main step (batchai_jobfile.h), and the setting that asked for them. */
static void render_checkpoint_origin(struct sbuf *b, const struct bai_plan *p, const char *setting)
{
    if (!p->signal_before_limit)
        return;
    sb_comment(b, "  --signal     %s: the main step is exec'd and warned before the time limit", setting);
    sb_puts(b, "#                (SIGUSR1), to checkpoint and stop; it resumes by its own flags\n"
               "#   --requeue    the same: requeued, not ended, when Slurm takes its nodes\n");
}

static void render_gpu_origin(struct sbuf *b, const struct bai_plan *p)
{
    if (!p->gpus_per_node)
        return;
    sb_comment(b, "  --%s  every GPU of each node, as the site's %s declares them", p->gpu_type ? "gres       " :
               "gpus-per-node", p->origin.gpu_setting);
    if (!p->gpu_per_rank)
        sb_puts(b, "#                the tasks are not ranks (one task, or TensorFlow's servers and workers):\n"
                   "#                each sees every GPU the job has on its node\n");
    else if (p->ranks_min == p->ranks_max)
        sb_comment(b, "               the main step's %d rank(s) per node get one GPU each (srun --gpus-per-task=1)%s",
                   p->ranks_max, p->ranks_max < p->gpus_per_node ? "; the node's other GPUs stay unused" : "");
    else
        sb_comment(b, "               the main step's ranks do not divide evenly: nodes run %d or %d ranks, one GPU "
                      "each (srun --gpus-per-task=1); a node's other GPUs stay unused", p->ranks_min, p->ranks_max);
}

/* Which partition and GPUs the job's cluster chose, and from what: the file's field, or --cluster. */
static void render_partition_origin(struct sbuf *b, const struct bai_plan *p, const char *field)
{
    if (!p->partition || !p->origin.cluster_id)
        return;
    if (!p->origin.cluster_mapped) {
        sb_comment(b, "  --partition  %s: the site's default partition (the job's cluster \"%s\" is not mapped, "
                   "unmapped_cluster=partition)", p->partition, p->origin.cluster_id);
        return;
    }
    const char *slash = strrchr(p->origin.cluster_id, '/'), *name = slash ? slash + 1 : p->origin.cluster_id;
    char from[300];
    if (p->origin.cluster_given)
        snprintf(from, sizeof from, "from --cluster %.200s", p->origin.cluster_id);
    else
        snprintf(from, sizeof from, "from %s \"%.200s\"", field, p->origin.cluster_id);
    if (p->gpus_per_node && p->origin.gpu_setting && strncmp(p->origin.gpu_setting, "gpus.", 5) == 0)
        sb_comment(b, "  --partition  %s, %d GPU%s per node: %s via cluster.%s=%s, %s=%s%s%d", p->partition,
                   p->gpus_per_node, p->gpus_per_node == 1 ? "" : "s", from, name, p->partition,
                   p->origin.gpu_setting, p->gpu_type ? p->gpu_type : "", p->gpu_type ? ":" : "", p->gpus_per_node);
    else
        sb_comment(b, "  --partition  %s: %s via the site's cluster map (cluster.%s=%s)", p->partition, from, name,
                   p->partition);
}

/* #SBATCH lines are read by sbatch, not by the shell: it cuts them at white space, takes ' " and \ as
 * quoting and an unquoted '#' as the end of the options (get_argument() in Slurm's src/sbatch/opt.c). Their
 * values are therefore never quoted but made of characters none of that applies to: translate checks the
 * job name and log directory (letters, digits, / . _ - @ + and %j) and the site's partition and QOS. The one
 * free text, an Azure ML display_name as the job's name, is escaped for sbatch (sb_sbatch_escape). Every
 * other line before the first command is a comment made by sb_comment(), which escapes line breaks. */
static void render_header(struct sbuf *b, const struct bai_plan *p)
{
    char time[32];

    bai_format_time(p->time_limit_seconds, time, sizeof time);
    /* Each step's command is single-quoted on purpose: the task's own shell expands it (SC2016), and a quote
     * within it is quoted again, which SC1003 takes for a mistyped escape. */
    sb_puts(b, "#!/bin/bash\n# shellcheck disable=SC2016,SC1003\n");
    sb_comment(b, "Batch script of the %s job \"%s\", made by batchai-job from its job file.",
               p->origin.aml ? "Azure ML command" : "Batch AI", p->job_name);
    sb_puts(b, "# sbatch --batchai-job submits exactly this; options typed on the sbatch command line win over\n"
               "# the #SBATCH lines below.\n");
    sb_puts(b, "#SBATCH --job-name=");
    sb_sbatch_escape(b, p->display_name ? p->display_name : p->job_name);
    sb_puts(b, "\n");
    sb_printf(b, "#SBATCH --nodes=%d\n", p->nodes);
    sb_printf(b, "#SBATCH --ntasks=%d\n", p->ntasks);
    if (p->ntasks_per_node)
        sb_printf(b, "#SBATCH --ntasks-per-node=%d\n", p->ntasks_per_node);
    sb_printf(b, "#SBATCH --time=%s\n", time);
    sb_printf(b, "#SBATCH --output=%s/stdout.txt\n", p->log_dir);
    sb_printf(b, "#SBATCH --error=%s/stderr.txt\n", p->log_dir);
    sb_puts(b, "#SBATCH --open-mode=append\n");
    if (p->signal_before_limit)
        sb_printf(b, "#SBATCH --signal=B:USR1@%d\n#SBATCH --requeue\n", p->signal_before_limit);
    if (p->partition)
        sb_printf(b, "#SBATCH --partition=%s\n", p->partition);
    if (p->gpus_per_node && p->gpu_type)
        sb_printf(b, "#SBATCH --gres=gpu:%s:%d\n", p->gpu_type, p->gpus_per_node);
    else if (p->gpus_per_node)
        sb_printf(b, "#SBATCH --gpus-per-node=%d\n", p->gpus_per_node);
    if (p->qos)
        sb_printf(b, "#SBATCH --qos=%s\n", p->qos);
    if (p->nice)
        sb_printf(b, "#SBATCH --nice=%d\n", p->nice);
    if (p->comment)
        sb_printf(b, "#SBATCH --comment=%s\n", p->comment);
    sb_puts(b, "#\n# Where the lines above come from:\n");
    if (p->origin.aml) {
        /* An Azure ML command job: the same lines from its own fields. */
        if (p->display_name)
            sb_comment(b, "  --job-name   display_name (the log directory keeps the name \"%s\")", p->job_name);
        sb_comment(b, "  --nodes      resources.instance_count %d", p->origin.node_count);
        sb_comment(b, "  --ntasks     instance_count x distribution.process_count_per_instance (tensorflow: "
                      "worker_count + parameter_server_count)");
        sb_comment(b, "  --time       limits.timeout%s", p->origin.default_wall_time ? " (not given: 7 days)" : "");
        sb_puts(b, "#   --output     the job file's directory, then <job name>/<job id>/stdouterr as Batch AI laid\n"
                   "#                out its logs\n" OPEN_MODE_ORIGIN);
        render_checkpoint_origin(b, p, BAI_CHECKPOINTABLE_VAR "=true (environment_variables)");
        render_partition_origin(b, p, "compute");
        if (p->comment)
            sb_comment(b, "  --comment    experiment_name, where batchai-job list finds it");
        render_gpu_origin(b, p);
        return;
    }
    sb_comment(b, "  --nodes      nodeCount %d", p->origin.node_count);
    sb_comment(b, "  --ntasks     %s", p->origin.process_count_given ? "processCount"
                                   : "the toolkit's default process count (nodeCount for MPI toolkits)");
    sb_comment(b, "  --time       constraints.maxWallClockTime%s",
               p->origin.default_wall_time ? " (Batch AI's default: 7 days)" : "");
    sb_comment(b, "  --output     stdOutErrPathPrefix \"%s\", resolved through the mounts to the site path,",
               p->origin.out_err_prefix);
    sb_puts(b, "#                then <job name>/<job id>/stdouterr as Batch AI lays out its logs\n" OPEN_MODE_ORIGIN);
    render_checkpoint_origin(b, p, "\"" BAI_CHECKPOINTABLE_KEY "\": true");
    render_partition_origin(b, p, "cluster.id");
    render_gpu_origin(b, p);
    if (p->qos || p->nice)
        sb_comment(b, "  --%s  schedulingPriority, through the site's priority map", p->qos ? "qos " : "nice");
}

static void render_environment(struct sbuf *b, const struct bai_plan *p)
{
    sb_puts(b, "#\n# Environment of every task (the plugin sets it on each node; AZ_BATCHAI_TASK_INDEX is the\n"
               "# task's SLURM_PROCID):\n");
    for (size_t i = 0; i < p->n_env; i++) {
        if (p->env[i].secret && !p->env[i].value)
            sb_comment(b, "  %s=<secret in an Azure Key Vault: refused at submit>", p->env[i].name);
        else if (p->env[i].secret)
            sb_comment(b, "  %s=<secret: sourced by the preparation and main steps from %s (0600, removed with "
                          "the job), never recorded>", p->env[i].name, p->secrets_file);
        else if (strchr(p->env[i].value, '\n')) /* a script, say: its size reads better than its escapes */
            sb_comment(b, "  %s=<%zu bytes over several lines>", p->env[i].name, strlen(p->env[i].value));
        else
            sb_comment(b, "  %s=%s", p->env[i].name, p->env[i].value);
    }
    if (p->n_mounts)
        sb_puts(b, "#\n# Mounts (site directories exposed under AZ_BATCHAI_JOB_MOUNT_ROOT on every node):\n");
    for (size_t i = 0; i < p->n_mounts; i++) {
        const struct bai_plan_mount *m = &p->mounts[i];
        if (m->site_path)
            sb_comment(b, "  %s -> %s (%s \"%s\")", m->target, m->site_path, bai_mount_kind_names[m->kind],
                       m->share);
        else
            sb_comment(b, "  %s <- mountCommand of unmanagedFileSystems, run as the user in a step",
                       p->mounts[i].target);
    }
    if (p->container) {
        sb_puts(b, "#\n");
        sb_comment(b, CONTAINER_LINE "%s" CONTAINER_RUNS "%s", p->origin.image, p->container);
        if (p->origin.shm_size)
            sb_comment(b, "  (shmSize \"%s\" is not applied: /dev/shm is the node's)", p->origin.shm_size);
    }
}

/* The unmanaged file systems' mountCommands: one step, once per node, as the user, on the node itself (not
 * in the container), before the preparation. Arguments: target, command, target, command... As Batch AI
 * did, the mount path is appended to the command (as one quoted word). */
static void render_mount_step(struct sbuf *b, const struct bai_plan *p)
{
    bool any = false;
    for (size_t i = 0; i < p->n_mounts; i++)
        any |= p->mounts[i].mount_command != NULL;
    if (!any)
        return;
    sb_puts(b, "\n# mountCommand of unmanagedFileSystems: once per node, as the job's user (allowed by the site's\n"
               "# allow_mount_command=yes).\n"
               "srun --nodes=\"$SLURM_JOB_NUM_NODES\" --ntasks=\"$SLURM_JOB_NUM_NODES\" --ntasks-per-node=1 \\\n"
               "    /bin/sh -c '");
    sb_puts(b, bai_node_check);
    sb_puts(b, "\n        while [ $# -gt 0 ]; do t=$1; mkdir -p \"$t\" && /bin/sh -c \"$2 \\\"\\$0\\\"\" \"$t\" ||\n"
               "        { echo \"batchai: the mountCommand for $t failed on node $SLURMD_NODENAME\" >&2; exit 1; }; shift 2; done' \\\n"
               "    batchai-mount");
    for (size_t i = 0; i < p->n_mounts; i++) {
        if (!p->mounts[i].mount_command)
            continue;
        char *target = bai_expand_jobid(p->mounts[i].target, "${SLURM_JOB_ID}");
        sb_puts(b, " \\\n    \"");
        sb_puts(b, target ? target : "");
        sb_puts(b, "\" ");
        sb_shell_quote(b, p->mounts[i].mount_command);
        b->failed |= !target;
        free(target);
    }
    sb_puts(b, " || exit $?\n");
}

/* Job preparation: once per node as the user, output and a per-node execution log in the log directory. */
static void render_prep(struct sbuf *b, const struct bai_plan *p)
{
    sb_puts(b, "\n# Job preparation (jobPreparation.commandLine): once per node, as the job's user, before the\n"
               "# main step; output in stdout-job_prep-<node>.txt and stderr-job_prep-<node>.txt.\n");
    sb_puts(b, "srun --nodes=\"$SLURM_JOB_NUM_NODES\" --ntasks=\"$SLURM_JOB_NUM_NODES\" --ntasks-per-node=1");
    if (p->container)
        sb_printf(b, " %s", p->container);
    /* The wrapper is plain sh (the container may have no bash): it logs, runs the command with its output in
     * the per-node files, logs the code. Node names come from SLURMD_NODENAME, not srun's %N, which is the
     * host name and collides when several slurmd share a host. A log path that is not a plain file (a FIFO,
     * a link) fails the node at once rather than stalling the step. */
    sb_puts(b, " \\\n    /bin/sh -c '");
    sb_puts(b, bai_node_check);
    sb_puts(b, "\n        n=$SLURMD_NODENAME; l=\"$log/execution-$n.log\"; t() { date -u +%Y-%m-%dT%H:%M:%SZ; }\n"
               "        for f in \"$l\" \"$log/stdout-job_prep-$n.txt\" \"$log/stderr-job_prep-$n.txt\"; do\n"
               "            if [ -L \"$f\" ] || { [ -e \"$f\" ] && [ ! -f \"$f\" ]; }; then\n"
               "                echo \"batchai: $f is not a regular file\" >&2; exit 1; fi; done\n");
    if (p->secrets_file) {
        char *secrets = bai_expand_jobid(p->secrets_file, "$SLURM_JOB_ID");
        sb_printf(b, "        . %s || exit 1\n", secrets ? secrets : "");
        b->failed |= !secrets;
        free(secrets);
    }
    sb_puts(b, "        a=\"attempt ${BATCHAI_ATTEMPT:-1}\"; echo \"$(t) $a: job preparation started\" >>\"$l\"\n"
               "        echo \"batchai: $a\" >>\"$log/stdout-job_prep-$n.txt\"; echo \"batchai: $a\" >>\"$log/stderr-job_prep-$n.txt\"\n"
               "        /bin/sh -c \"$0\" >>\"$log/stdout-job_prep-$n.txt\" 2>>\"$log/stderr-job_prep-$n.txt\"; rc=$?\n"
               "        echo \"$(t) $a: job preparation finished with exit code $rc\" >>\"$l\"; exit $rc' \\\n    ");
    sb_shell_quote(b, p->prep_command);
    sb_puts(b, "\nrc=$?\n"
               "if [ \"$rc\" -ne 0 ]; then\n"
               "    for f in \"$log\"/execution-*.log; do\n"
               "        if [ ! -f \"$f\" ] || [ -L \"$f\" ]; then continue; fi\n"
               "        node=${f##*/execution-}; node=${node%.log}\n"
               "        code=$(sed -n 's/.*job preparation finished with exit code //p' \"$f\" | tail -n 1)\n"
               "        [ \"${code:-0}\" = 0 ] || echo \"batchai: job preparation failed on node $node with exit code"
               " $code (see stderr-job_prep-$node.txt)\" >&2\n"
               "    done\n"
               "    exit \"$rc\"\n"
               "fi\n"
               "# srun can end well while a node never finished (its slurmd lost mid-step): the main step starts only\n"
               "# when the logs hold one successful end of this attempt's preparation per node.\n"
               "prepared=0\n"
               "for f in \"$log\"/execution-*.log; do\n"
               "    if [ ! -f \"$f\" ] || [ -L \"$f\" ]; then continue; fi\n"
               "    prepared=$((prepared + $(grep -cx \".* attempt $BATCHAI_ATTEMPT: job preparation finished with exit code 0\" \"$f\")))\n"
               "done\n"
               "if [ \"$prepared\" -ne \"$SLURM_JOB_NUM_NODES\" ]; then\n"
               "    echo \"batchai: the job preparation finished on $prepared of $SLURM_JOB_NUM_NODES nodes (attempt $BATCHAI_ATTEMPT): the main step is not started\" >&2\n"
               "    exit 1\n"
               "fi\n");
}

static void render_log_dir(struct sbuf *b, const struct bai_plan *p)
{
    sb_puts(b, "\nlog=");
    sb_shell_pattern(b, p->log_dir);
    sb_puts(b, "\nexport log\n"
               "# Slurm reruns the batch script from the top on a requeue: attempt 1, 2, ... (SLURM_RESTART_COUNT + 1)\n"
               "# marks every line of the execution logs and heads each attempt's part of the appended logs.\n"
               "BATCHAI_ATTEMPT=$((${SLURM_RESTART_COUNT:-0} + 1))\n"
               "export BATCHAI_ATTEMPT\n");
}

static void render_node_steps(struct sbuf *b, const struct bai_plan *p)
{
    render_mount_step(b, p);
    if (p->prep_command)
        render_prep(b, p);
}

char *bai_render_node_script(const struct bai_plan *p)
{
    struct sbuf b = { 0 };

    if (!bai_plan_has_node_steps(p))
        return NULL;
    render_unprepared(&b);
    render_log_dir(&b, p);
    render_node_steps(&b, p);
    sb_puts(&b, "exit 0\n");
    return sb_finish(&b);
}

char *bai_render_script(const struct bai_plan *p)
{
    struct sbuf b = { 0 };

    render_header(&b, p);
    render_environment(&b, p);
    sb_puts(&b, "\n# The plugin prepared this node, or nothing runs (bai_node_check, steps.h); every step checks\n"
                "# its own node the same way.\n");
    render_unprepared(&b);
    sb_printf(&b, "%s\n", bai_node_check);
    render_log_dir(&b, p);
    sb_puts(&b, "echo \"batchai: attempt $BATCHAI_ATTEMPT of job $SLURM_JOB_ID started $(date -u +%Y-%m-%dT%H:%M:%SZ)\"\n"
                "echo \"batchai: attempt $BATCHAI_ATTEMPT of job $SLURM_JOB_ID started $(date -u +%Y-%m-%dT%H:%M:%SZ)\" >&2\n"
                "# One line per event of the job (its main step, Slurm's signals) in the execution-<node>.log of each of\n"
                "# its nodes, as Batch AI's node agents kept; a log that is not a plain file is left alone.\n"
                "batchai_log() {\n"
                "    local n f line; line=\"$(date -u +%Y-%m-%dT%H:%M:%SZ) attempt $BATCHAI_ATTEMPT: $*\"\n"
                "    for n in $(scontrol show hostnames \"$SLURM_JOB_NODELIST\"); do f=$log/execution-$n.log\n"
                "        if [ -L \"$f\" ] || { [ -e \"$f\" ] && [ ! -f \"$f\" ]; }; then continue; fi\n"
                "        echo \"$line\" >>\"$f\"\n"
                "    done\n"
                "}\n"
                "# The job's nodes as addresses a toolkit can reach, in allocation order: each node's NodeAddr (its\n"
                "# Slurm name need not resolve), one per line.\n"
                "batchai_addrs() {\n"
                "    local map n a; map=$(scontrol -o show node \"$SLURM_JOB_NODELIST\")\n"
                "    for n in $(scontrol show hostnames \"$SLURM_JOB_NODELIST\"); do\n"
                "        a=$(printf '%s\\n' \"$map\" | sed -n \"s/^NodeName=$n .* NodeAddr=\\([^ ]*\\) .*/\\1/p\"); echo \"${a:-$n}\"\n"
                "    done\n"
                "}\n");
    if (strstr(p->main_step, "batchai_hosts"))
        sb_puts(&b, "# addr:port of the first N nodes, cycling, for toolkits that want host lists.\n"
                    "batchai_hosts() { batchai_addrs | awk -v n=\"$1\" -v port=\"$2\" "
                    "'{h[NR]=$0} END {for (i = 0; i < n; i++) printf \"%s%s:%d\", (i ? \",\" : \"\"), h[i % NR + 1], "
                    "port}'; }\n");
    sb_puts(&b, "batchai_addrs >\"$AZ_BATCHAI_MPI_HOST_FILE\"\n");
    render_node_steps(&b, p);
    sb_printf(&b, "\n# Main step (%s).\nbatchai_log \"main step started\"\n",
              p->origin.aml ? "the Azure ML command" : p->origin.toolkit);
    /* Slurm's SIGTERM (scancel, requeue, preemption, time limit) reaches the steps itself; the script notes it,
     * so that the log says how the attempt ended (batchai-job status shows it after a requeue). */
    sb_printf(&b, "trap 'batchai_log \"SIGTERM from Slurm (scancel, requeue, preemption or the time limit)\"%s' TERM\n",
              p->signal_before_limit ? "; warned=1" : "");
    if (p->signal_before_limit)
        /* bash runs a trap only between commands: the step runs in the background so that the warning
         * reaches it at once (srun passes SIGUSR1 on to its tasks); a wait cut short by a trap is resumed. */
        sb_printf(&b, "trap 'batchai_log \"SIGUSR1: the time limit is near, passed to the main step\"; "
                      "kill -USR1 \"$main\" 2>/dev/null; warned=1' USR1\n%s &\nmain=$!\nwarned=1\n"
                      "while [ \"$warned\" = 1 ]; do warned=0; wait \"$main\"; rc=$?; done\n", p->main_step);
    else
        sb_printf(&b, "%s\nrc=$?\n", p->main_step);
    /* srun returns the worst code of its tasks, often the 143 of ranks it killed after the first one failed;
     * the plugin notes every failing task with the time it ended (spank_task_exit.c), and the earliest is the
     * job's. */
    sb_puts(&b, "if [ \"$rc\" != 0 ]; then\n"
                "    first=$(cat \"$log\"/execution-*.log 2>/dev/null | grep \" attempt $BATCHAI_ATTEMPT: task [0-9]* of step \" | sort | head -n 1)\n"
                "    if [ -n \"$first\" ]; then\n"
                "        batchai_log \"first failing ${first#*: } (srun returned $rc)\"\n"
                "        echo \"batchai: first failing ${first#*: } (srun returned $rc)\" >&2\n"
                "        rc=${first##* code }\n"
                "    fi\n"
                "fi\n"
                "batchai_log \"main step finished with exit code $rc\"\nexit \"$rc\"\n");
    return sb_finish(&b);
}
