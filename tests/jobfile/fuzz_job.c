/* libFuzzer target: any bytes through the whole pure path a job file takes (parse, validate, translate with
 * default site settings, render). Crashes, sanitizer reports and leaks are findings. */
#include <stdint.h>
#include <stdlib.h>

#include "job.h"
#include "settings.h"
#include "translate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct bai_settings site;
    static int ready;
    struct bai_diag diag = { 0 };
    struct bai_translate_opts opts = { NULL, "fuzz.json" };
    struct bai_plan plan;
    struct bai_job job;

    if (!ready)
        ready = bai_settings_init(&site) == 0;
    if (bai_job_parse((const char *)data, size, &job, &diag) == 0) {
        if (bai_translate(&job, &site, &opts, &plan, &diag) == 0) {
            free(bai_render_script(&plan));
            bai_plan_free(&plan);
        }
        bai_job_free(&job);
    }
    bai_diag_free(&diag);
    return 0;
}
