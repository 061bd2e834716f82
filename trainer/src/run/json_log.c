/* json_log: the --log-json lines (json_log.h). */
#include "run/json_log.h"

void json_log_line(FILE *f, const char *type, int epoch, int step, int steps, double loss, double acc,
                   const double *val, double ips, double lr, double secs, const double *times)
{
    if (!f)
        return;
    fprintf(f, "{\"type\":\"%s\",\"epoch\":%d,\"step\":%d,\"steps\":%d,\"loss\":%.6g,\"acc\":%.6g", type, epoch,
            step, steps, loss, acc);
    if (val)
        fprintf(f, ",\"val_loss\":%.6g,\"val_acc\":%.6g", val[0], val[1]);
    fprintf(f, ",\"images_per_sec\":%.1f,\"lr\":%.6g,\"seconds\":%.3f", ips, lr, secs);
    if (times)
        fprintf(f, ",\"step_seconds\":%.4f,\"wait_seconds\":%.4f,\"progress_cpu_seconds\":%.4f", times[0], times[1],
                times[2]);
    fputs("}\n", f);
    fflush(f);
}
