/* Translation of an Azure ML command job into the plan: see azureml_plan.h. bai_translate() does what both formats
 * share (allocation, mounts, logs, the AZ_BATCHAI_* environment, the container); this file adds what only a
 * command job has: its inputs and outputs, its working directory and its distributed launch, as Azure ML
 * sets them up. */
#include "azureml_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azureml.h"
#include "checks.h"
#include "jsonv.h"
#include "sbuf.h"
#include "steps.h"

const char *bai_aml_image(const struct bai_job *job, const struct bai_settings *site, struct bai_diag *d)
{
    const char *image;

    /* The site may run an image, or a reference, on the nodes' own software (environment.REF=host). */
    if (job->image) {
        image = bai_settings_environment_image(site, job->image);
        return image && strcmp(image, BAI_ENV_HOST) == 0 ? NULL : job->image;
    }
    if (!job->aml->environment)
        return NULL;
    image = bai_settings_environment_image(site, job->aml->environment);
    if (image && strcmp(image, BAI_ENV_HOST) == 0)
        return NULL;
    if (!image)
        bai_diag_add(d, "environment", "the Azure ML environment \"%.100s\" is not mapped on this site: give "
                     "environment.image, or ask the admins for environment.%.100s=IMAGE", job->aml->environment,
                     job->aml->environment);
    return image;
}

char *bai_aml_file_dir(const char *job_file, struct bai_diag *d)
{
    const char *slash = job_file ? strrchr(job_file, '/') : NULL;
    char *dir;

    if (!job_file || job_file[0] != '/') {
        bai_diag_add(d, "", "an Azure ML job's code, data and logs are found from its file: give the file's "
                     "absolute path");
        return NULL;
    }
    dir = strndup(job_file, slash == job_file ? 1 : (size_t)(slash - job_file));
    if (!dir)
        bai_diag_add(d, "", "out of memory");
    return dir;
}

/* `rel` under `dir` ("." and a leading "./" dropped), or `rel` when absolute. */
static char *under(const char *dir, const char *rel)
{
    char *out;

    if (rel[0] == '/')
        return strdup(rel);
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    if (!strcmp(rel, ".") || !*rel)
        return strdup(dir);
    return asprintf(&out, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", rel) < 0 ? NULL : out;
}

/* Where an input's or output's data is, as a "%j"-pattern host path; NULL for a literal, or with a fault. */
static char *io_source(const struct bai_plan *plan, const struct bai_job *job, const struct bai_settings *site,
                       const struct bai_aml_io *io, const char *file_dir, const char *job_out, struct bai_diag *d)
{
    char field[JV_PATH_MAX], path[JV_PATH_MAX], *out = NULL;
    const char *dir;

    switch (io->source) {
    case BAI_AML_LITERAL:
        return NULL;
    case BAI_AML_LOCAL:
        return under(file_dir, io->value);
    case BAI_AML_DATASTORE: /* through the share's mount, as a mountVolumes path under the job's mount root */
        if (asprintf(&out, "%s/mounts/%s%s%s", plan->job_dir, job->mounts[io->mount].relative_path,
                     *io->value ? "/" : "", io->value) < 0)
            out = NULL;
        return out;
    case BAI_AML_ASSET:
        dir = bai_settings_data_dir(site, io->value);
        if (dir)
            return strdup(dir);
        jv_child(field, io->output ? "outputs" : "inputs", io->name);
        jv_child(path, field, "path");
        bai_diag_add(d, path, "the data asset \"%.100s\" is not mapped on this site: give a path (beside the job "
                     "file, or in a datastore the site maps to a share), or ask the admins for data.%.100s=DIR",
                     io->value, io->value);
        return NULL;
    case BAI_AML_DEFAULT:
        return asprintf(&out, "%s/outputs/%s", job_out, io->name) < 0 ? NULL : out;
    }
    return NULL;
}

/* The "%j"/"%N"-pattern as a double-quoted shell word of a step (where SLURMD_NODENAME is the step's node). */
static void quoted_pattern(struct sbuf *b, const char *pattern)
{
    char *j = bai_expand_jobid(pattern, "${SLURM_JOB_ID}");
    char *s = j ? bai_expand_node(j, "${SLURMD_NODENAME}") : NULL;

    sb_printf(b, "\"%s\"", s ? s : "");
    b->failed |= !s;
    free(j);
    free(s);
}

/* A step on every node, as the user and outside any container: copies of inputs of mode download before the
 * main step (all nodes at once, each into its own job temp), of outputs of mode upload after it (node after
 * node, in allocation order: the destination is shared, so two nodes never write into it at once, and a file
 * that several nodes wrote is the last node's). `script` holds the copies; like every step, it first checks
 * that the plugin prepared its node (bai_node_check). */
static void copy_step(struct sbuf *b, const char *what, const char *script, bool node_by_node)
{
    struct sbuf text = { 0 };
    char *s;

    sb_printf(&text, "%s\n%s", bai_node_check, script);
    s = sb_finish(&text);
    sb_printf(b, "# %s\n", what);
    if (node_by_node)
        sb_puts(b, "(for n in $(scontrol show hostnames \"$SLURM_JOB_NODELIST\"); do\n"
                   "srun --nodes=1 --ntasks=1 --nodelist=\"$n\" /bin/sh -ec ");
    else
        sb_puts(b, "srun --nodes=\"$SLURM_JOB_NUM_NODES\" --ntasks=\"$SLURM_JOB_NUM_NODES\" --ntasks-per-node=1 "
                   "/bin/sh -ec ");
    sb_shell_quote(b, s ? s : "false");
    if (node_by_node)
        sb_puts(b, " || exit\ndone)");
    b->failed |= !s;
    free(s);
}

/* The command with ${{inputs.X}} and ${{outputs.X}} replaced: literals by their text, data by a reference
 * to the AZURE_ML_INPUT_X / AZURE_ML_OUTPUT_X variable that holds its path (the validator made sure that every
 * reference names one). */
static void substitute(struct sbuf *b, const struct bai_aml *aml)
{
    const char *p = aml->command, *at;

    while ((at = strstr(p, "${{")) != NULL) {
        const char *end = strstr(at, "}}"), *ref = at + 3;
        size_t n = (size_t)(end - ref);
        sb_printf(b, "%.*s", (int)(at - p), p);
        while (*ref == ' ')
            ref++, n--;
        while (n && ref[n - 1] == ' ')
            n--;
        for (size_t i = 0; i < aml->n_io; i++) {
            const struct bai_aml_io *io = &aml->io[i];
            const char *kind = io->output ? "outputs." : "inputs.";
            size_t k = strlen(kind);
            if (n != k + strlen(io->name) || strncmp(ref, kind, k) != 0 || strncmp(ref + k, io->name, n - k) != 0)
                continue;
            if (io->source == BAI_AML_LITERAL)
                sb_puts(b, io->value);
            else
                sb_printf(b, "${AZURE_ML_%s_%s}", io->output ? "OUTPUT" : "INPUT", io->name);
        }
        p = end + 2;
    }
    sb_puts(b, p);
}

/* Azure ML runs each command in a working directory of its own, with ./outputs and ./logs that it keeps as the
 * job's outputs. Here: each task's own directory in its node's job temp (no two tasks link into one), holding
 * links to what the step's directory holds (the code, or the submit directory) and ./outputs and ./logs
 * linked to <job_out>/outputs and <job_out>/logs, which all nodes share and which outlive the job. Made by
 * the task, as the user; a requeue makes it anew. */
static void working_dir(struct sbuf *cmd, const struct bai_plan *plan, const char *job_out)
{
    char *temp = NULL;

    if (asprintf(&temp, "%s/azureml-wd", plan->job_temp) < 0)
        temp = NULL;
    sb_puts(cmd, "wd=");
    quoted_pattern(cmd, temp ? temp : "");
    sb_puts(cmd, "/$SLURM_PROCID out=");
    quoted_pattern(cmd, job_out);
    sb_puts(cmd, "\nrm -rf \"$wd\" && mkdir -p \"$wd\" \"$out/outputs\" \"$out/logs\" &&\n"
                 "find \"$PWD\" -mindepth 1 -maxdepth 1 ! -name outputs ! -name logs -exec sh -c 'ln -s \"$@\" \"$0\"' "
                 "\"$wd\" {} + &&\nln -s \"$out/outputs\" \"$out/logs\" \"$wd\" && cd \"$wd\" || "
                 "{ echo \"batchai: cannot make the working directory $wd with ./outputs and ./logs\" >&2; exit 1; }\n");
    cmd->failed |= !temp;
    free(temp);
}

/* A sweep's trial (x-batchai-sweep, azureml.h): its array index's values as AZUREML_SWEEP_<name>, and the
 * tracking store under its own outputs, set before the command, which reads them. */
static void sweep_trial(struct sbuf *b, const struct bai_aml *aml)
{
    if (!aml->n_sweep_trials)
        return;
    sb_puts(b, "case \"${SLURM_ARRAY_TASK_ID:-}\" in\n");
    for (size_t t = 0; t < aml->n_sweep_trials; t++) {
        sb_printf(b, "%zu)", t);
        for (size_t k = 0; k < aml->n_sweep_params; k++) {
            sb_printf(b, " AZUREML_SWEEP_%s=", aml->sweep_names[k]);
            sb_shell_quote(b, aml->sweep_values[t * aml->n_sweep_params + k]);
        }
        sb_puts(b, " ;;\n");
    }
    sb_puts(b, "*) echo \"batchai: task ${SLURM_ARRAY_TASK_ID:-?} is no trial of the sweep\" >&2; exit 1 ;;\nesac\n");
    for (size_t k = 0; k < aml->n_sweep_params; k++)
        sb_printf(b, "export AZUREML_SWEEP_%s\n", aml->sweep_names[k]);
    sb_puts(b, "MLFLOW_TRACKING_URI=\"file:${AZ_BATCHAI_STDOUTERR_DIR%/stdouterr}/outputs/mlruns\"\n"
               "export MLFLOW_TRACKING_URI\n");
}

/* The main step: the command on every process, with the environment Azure ML's launcher gives each. */
static void main_step(struct sbuf *b, struct bai_plan *plan, const struct bai_job *job,
                      const struct bai_settings *site, const char *job_out)
{
    const struct bai_aml *aml = job->aml;
    struct sbuf cmd = { 0 };
    char extra[64], *text;
    const char *prelude = NULL;
    int n = bai_aml_task_count(job);

    snprintf(extra, sizeof extra, "--ntasks-per-node=%d", aml->per_node);
    working_dir(&cmd, plan, job_out);
    /* Azure ML makes every output's directory before the command runs. */
    for (size_t i = 0; i < aml->n_io; i++)
        if (aml->io[i].output)
            sb_printf(&cmd, "mkdir -p \"$AZURE_ML_OUTPUT_%s\" || exit 1\n", aml->io[i].name);
    char mpi_env[160];
    switch (aml->dist) {
    case BAI_AML_SINGLE:
        break;
    case BAI_AML_MPI:
        /* Azure ML's mpirun gives the command Open MPI's rank variables, which its docs tell scripts to read
         * before MPI starts; srun --mpi=pmix gives them only inside MPI_Init. The same facts from Slurm: every
         * node runs exactly per_node tasks (--ntasks-per-node with ntasks = nodes x per_node). Open MPI's own
         * init under pmix takes the same values and is not misled by them (tests/cluster/azureml_mpi.sh). */
        snprintf(mpi_env, sizeof mpi_env, "OMPI_COMM_WORLD_RANK=$SLURM_PROCID OMPI_COMM_WORLD_SIZE=$SLURM_NTASKS "
                 "OMPI_COMM_WORLD_LOCAL_RANK=$SLURM_LOCALID OMPI_COMM_WORLD_LOCAL_SIZE=%d", aml->per_node);
        prelude = mpi_env;
        break;
    case BAI_AML_PYTORCH:
        /* Azure ML starts each process itself (no torchrun) and sets torch.distributed's variables. */
        bai_pytorch_rendezvous(b, n);
        sb_puts(b, "\n");
        prelude = "RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID NODE_RANK=$SLURM_NODEID";
        break;
    case BAI_AML_TENSORFLOW:
        /* TF_CONFIG as Azure ML writes it: the cluster's workers then parameter servers, each task its own
         * port, tasks laid out cyclically over the nodes as srun --distribution=cyclic places them. */
        sb_printf(b, "AZ_BATCHAI_TF_CLUSTER=$(batchai_addrs | awk -v w=%d -v p=%d '{h[NR]=$0} END {\n"
                     "    s = \"{\\\"worker\\\": [\"; for (i = 0; i < w + p; i++) {\n"
                     "        s = s (i == w ? \"], \\\"ps\\\": [\" : i ? \", \" : \"\") \"\\\"\" h[i %% NR + 1] \":\" 2222 + i \"\\\"\" }\n"
                     "    print s \"]}\" }')\nexport AZ_BATCHAI_TF_CLUSTER\n", aml->workers, aml->ps);
        sb_printf(&cmd, "if [ \"$SLURM_PROCID\" -lt %d ]; then t=worker i=$SLURM_PROCID; else t=ps i=$((SLURM_PROCID - %d)); fi\n"
                        "TF_CONFIG=\"{\\\"cluster\\\": $AZ_BATCHAI_TF_CLUSTER, \\\"task\\\": {\\\"type\\\": \\\"$t\\\", "
                        "\\\"index\\\": $i}, \\\"environment\\\": \\\"cloud\\\"}\"; export TF_CONFIG\n", aml->workers,
                  aml->workers);
        snprintf(extra, sizeof extra, "--distribution=cyclic");
        break;
    }
    sweep_trial(&cmd, aml);
    /* A checkpointable command (batchai_jobfile.h), or one that can be (checks.h), is exec'd, so that Slurm's signals
     * reach it rather than the shell. */
    if (!bai_command_execs(aml->command) && (job->checkpointable || bai_command_can_exec(aml->command)))
        sb_puts(&cmd, "exec ");
    substitute(&cmd, aml);
    text = sb_finish(&cmd);
    if (!text) {
        b->failed = true;
        return;
    }
    bai_plan_step(b, plan, site, aml->dist == BAI_AML_MPI, n, extra, prelude, text);
    free(text);
}

void bai_aml_plan(struct bai_plan *plan, const struct bai_job *job, const struct bai_settings *site,
                  const char *file_dir, const char *job_out, struct bai_diag *d)
{
    const struct bai_aml *aml = job->aml;
    struct sbuf b = { 0 }, in = { 0 }, out = { 0 };
    size_t before = bai_diag_total(d);

    if (aml->dist != BAI_AML_TENSORFLOW)
        plan->ntasks_per_node = aml->per_node;
    if (aml->code && !(plan->workdir = under(file_dir, aml->code)))
        bai_diag_add(d, "code", "out of memory");
    for (size_t i = 0; i < aml->n_io; i++) {
        const struct bai_aml_io *io = &aml->io[i];
        char *src = io_source(plan, job, site, io, file_dir, job_out, d), *value = NULL, name[96];
        if (!src)
            continue;
        if (io->mode == BAI_AML_MOUNT) {
            value = src;
            src = NULL;
        } else {
            /* download: a copy on each node, in the job's temp; upload: written there, copied back at the end */
            struct sbuf *s = io->output ? &out : &in;
            const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
            char *staged = NULL;
            if (asprintf(&staged, "%s/%s/%s", plan->job_temp, io->output ? "outputs" : "inputs", io->name) < 0)
                staged = NULL;
            if (staged && asprintf(&value, "%s%s%s", staged, io->file ? "/" : "", io->file ? base : "") < 0)
                value = NULL;
            sb_puts(s, "mkdir -p ");
            quoted_pattern(s, io->output ? src : staged ? staged : "");
            if (io->output || !io->file) {
                sb_puts(s, "; cp -R ");
                quoted_pattern(s, io->output ? staged ? staged : "" : src);
                sb_puts(s, "/. ");
                quoted_pattern(s, io->output ? src : staged ? staged : "");
            } else {
                sb_puts(s, "; cp ");
                quoted_pattern(s, src);
                sb_puts(s, " ");
                quoted_pattern(s, staged ? staged : "");
            }
            sb_puts(s, "\n");
            free(staged);
        }
        snprintf(name, sizeof name, "AZURE_ML_%s_%s", io->output ? "OUTPUT" : "INPUT", io->name);
        plan->env[plan->n_env].name = strdup(name);
        plan->env[plan->n_env++].value = value;
        if (!value || !plan->env[plan->n_env - 1].name)
            bai_diag_add(d, "", "out of memory");
        free(src);
    }
    if (in.failed || out.failed)
        bai_diag_add(d, "", "out of memory");
    if (bai_diag_total(d) > before) {
        free(sb_finish(&in));
        free(sb_finish(&out));
        return;
    }
    bool any_in = in.len > 0, any_out = out.len > 0;
    char *ins = sb_finish(&in), *outs = sb_finish(&out);
    if (any_in) {
        copy_step(&b, "Inputs of mode download: copied into the job's temp on each node, as the job's user.",
                  ins ? ins : "false", false);
        sb_puts(&b, " || exit $?\n");
    }
    main_step(&b, plan, job, site, job_out);
    if (any_out) {
        sb_puts(&b, "\nrc=$?\n");
        copy_step(&b, "Outputs of mode upload: copied back from each node in turn, as the job's user.",
                  outs ? outs : "false", true);
        sb_puts(&b, " || { echo \"batchai: copying the outputs of mode upload back failed\" >&2; "
                    "[ \"$rc\" -ne 0 ] || rc=1; }\n(exit \"$rc\")");
    }
    free(ins);
    free(outs);
    plan->main_step = sb_finish(&b);
}
