/* The translation of an Azure ML command job (azureml.h) into the plan, called by bai_translate() for a job
 * with job->aml: what only such a job has (its inputs and outputs, working directory, distributed launch). */
#ifndef BAI_AZUREML_PLAN_H
#define BAI_AZUREML_PLAN_H

#include "batchai_jobfile.h"

/* The image the job runs in: environment.image, or the site's environment.<ref> for an azureml: reference;
 * NULL with no fault when the job names none, NULL with a fault when the reference is not mapped. */
const char *bai_aml_image(const struct bai_job *job, const struct bai_settings *site, struct bai_diag *d);

/* The job file's directory, which holds the logs (as stdOutErrPathPrefix would) and anchors code and local
 * paths. Newly allocated; NULL with a fault unless job_file is absolute. */
char *bai_aml_file_dir(const char *job_file, struct bai_diag *d);

/* The allocation, working directory and AZURE_ML_INPUT_<name> / AZURE_ML_OUTPUT_<name> variables of the plan
 * (plan->env has room for n_io more), then the main step. job_out is the job's directory beside its logs. */
void bai_aml_plan(struct bai_plan *plan, const struct bai_job *job, const struct bai_settings *site,
                  const char *file_dir, const char *job_out, struct bai_diag *d);

#endif
