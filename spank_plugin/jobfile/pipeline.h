/* An Azure ML pipeline job (pipelineJob.schema.json) as a graph of command jobs. It knows nothing of Slurm:
 * batchai-job submits each step as the command job this file writes for it, after the steps it depends on.
 *
 * Contract:
 *  - bai_pipeline_parse reads the pipeline, its components (inline, a file relative to the file that names
 *    it, `azureml:NAME@latest` or `azureml:NAME:VERSION` through the site's component.REF map) and nested
 *    `type: pipeline` components, and gives every `type: command` step one command-job document: the
 *    component's command, code (made absolute), environment, distribution, resources and variables, the
 *    step's overrides, the compute (the step's, else settings.default_compute), and every input and output
 *    bound. Bindings: `${{parent.inputs.X}}`, `${{parent.outputs.X}}`, `${{parent.jobs.S.outputs.Y}}` and
 *    literals; local paths are made absolute from the file that names them.
 *  - Refused, with the YAML path, before anything runs: step kinds Slurm cannot run (automl, spark,
 *    parallel, data_transfer, import), an unknown step, input or output in a binding, a cycle, a
 *    type mismatch (a literal into data, data into a literal, a uri_file into a uri_folder and back).
 *  - A `type: sweep` step (trial: a command component, search_space, objective, limits, sampling_algorithm)
 *    is bound as a command step whose search-space inputs are each trial's values (${AZUREML_SWEEP_X}), then
 *    made the job array's command job by bai_sweep_step (sweep.h); `sweep` holds its trials. Its outputs are
 *    its best trial's: the caller's job that picks the best after the array makes them (bound to no path).
 *  - Steps come out in an order where each one's dependencies come first.
 *  - An output bound to no path is the directory the site keeps for the step's job (an Azure ML command
 *    job's own output directory, BASE/<step>/<job id>/outputs/<name>, BASE the directory of the step
 *    files); a step that reads it gets that path once the producer's job id is known. */
#ifndef BAI_PIPELINE_H
#define BAI_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "diag.h"
#include "settings.h"
#include "sweep.h"

#define BAI_PIPELINE_MAX_STEPS 64

/* An input of a step that reads another step's output. */
struct bai_pl_link {
    char *input;  /* the consumer's input */
    size_t from;  /* the producing step (index) */
    char *output; /* its output */
};

struct bai_pl_step {
    char *name;       /* the job name: the step's key; a nested pipeline's steps are OUTER.INNER */
    char *yaml_path;  /* jobs.S (jobs.OUTER.jobs.INNER) */
    cJSON *doc;       /* the command job */
    size_t deps[BAI_PIPELINE_MAX_STEPS];
    size_t n_deps;
    struct bai_pl_link *links;
    size_t n_links;
    struct bai_sweep *sweep; /* a sweep step: doc is its trial, the array's command job; else NULL */
};

/* A pipeline output and the step output that makes it. */
struct bai_pl_output {
    char *name;
    size_t step;
    char *output;
};

struct bai_pipeline {
    struct bai_pl_step steps[BAI_PIPELINE_MAX_STEPS];
    size_t n_steps;
    struct bai_pl_output *outputs;
    size_t n_outputs;
    bool continue_on_step_failure;
    char *display_name; /* or NULL */
};

/* Whether the text is an Azure ML pipeline job (YAML with `type: pipeline`). */
bool bai_pipeline_detect(const char *text, size_t len);

/* Parse the pipeline whose text was read from `file` (an absolute path). Returns 0, or -1 with every fault
 * in d (the pipeline is then empty). */
int bai_pipeline_parse(const char *text, size_t len, const char *file, const struct bai_settings *site,
                       uint64_t seed, struct bai_pipeline *p, struct bai_diag *d);

/* The directory of step `step`'s output `output` once `jobid` is its job: its bound path, else under
 * `base` (above). New string, or NULL. */
char *bai_pipeline_output_path(const struct bai_pipeline *p, size_t step, const char *output, const char *base,
                               const char *jobid);

/* Step i's command job as JSON text, the paths of its links filled from jobids[] (each producer's job id).
 * New string, or NULL. */
char *bai_pipeline_step_text(const struct bai_pipeline *p, size_t i, const char *base, const char *const jobids[]);

void bai_pipeline_free(struct bai_pipeline *p);

#endif
