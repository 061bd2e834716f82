/* libFuzzer target: any bytes through the whole pure path a job file takes (parse, validate, translate with
 * default site settings and the Azure ML maps of the reference jobs, render), and through the pipeline and
 * sweep parsers (a pipeline's component files are looked for in a directory that does not exist). Crashes,
 * sanitizer reports and leaks are findings. */
#include <stdint.h>
#include <stdlib.h>

#include "batchai_jobfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct bai_settings site;
    static int ready;
    struct bai_diag diag = { 0 };
    /* Absolute, as the plugin and batchai-job give it: an Azure ML job's paths are found from it. */
    struct bai_translate_opts opts = { .job_file = "/fuzz/fuzz.json" };
    struct bai_plan plan;
    struct bai_job job;

    if (!ready) {
        ready = bai_settings_init(&site) == 0;
        bai_settings_apply(&site, "environment.azureml:AzureML-acpt-pytorch-2.8-cuda12.6@latest=pytorch/pytorch:2.8",
                           "fuzz", false, &diag);
        bai_settings_apply(&site, "data.azureml:cifar-10-example@latest=/srv/data/cifar", "fuzz", false, &diag);
        bai_diag_free(&diag);
    }
    if (bai_job_parse((const char *)data, size, &job, &diag) == 0) {
        if (bai_translate(&job, &site, &opts, &plan, &diag) == 0) {
            free(bai_render_script(&plan));
            bai_plan_free(&plan);
        }
        bai_job_free(&job);
    }
    bai_diag_free(&diag);
    struct bai_pipeline p;
    if (bai_pipeline_parse((const char *)data, size, "/nonexistent-fuzz/p.yml", &site, 1, &p, &diag) == 0) {
        const char *ids[BAI_PIPELINE_MAX_STEPS];
        for (size_t i = 0; i < p.n_steps; i++)
            ids[i] = "1";
        for (size_t i = 0; i < p.n_steps; i++)
            free(bai_pipeline_step_text(&p, i, "/nonexistent-fuzz/p", ids));
        bai_pipeline_free(&p);
    }
    bai_diag_free(&diag);
    struct bai_sweep sw;
    if (bai_sweep_parse((const char *)data, size, "/nonexistent-fuzz/s.yml", 1, &sw, &diag) == 0)
        bai_sweep_free(&sw);
    bai_diag_free(&diag);
    return 0;
}
