/* libFuzzer target: any bytes through the plan's wire reader (spank/plan_wire.c); what it accepts must come
 * back byte for byte through the writer. Crashes, sanitizer reports, leaks and a changed round trip are
 * findings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bai_wire_plan w;
    char why[BAI_WIRE_WHY_MAX];
    if (bai_wire_plan_read((const char *)data, size, &w, why) == 0) {
        size_t len;
        char *again = bai_wire_plan_write(&w, &len);
        if (!again || len != size || memcmp(again, data, size) != 0)
            abort();
        free(again);
    }
    bai_plan_free(&w.plan);
    return 0;
}
