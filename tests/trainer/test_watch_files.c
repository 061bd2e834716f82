/* The writers behind --csv and --tensorboard, alone: CRC-32C's check value, the CSV's numbers as Python's
 * repr(float) prints them (values computed with Python 3), and csv_log_open cutting a file back to the rows
 * a resume keeps, or refusing one of another kind untouched. The files as a whole are read back by
 * independent readers in test_watch.sh and test_watch_resume.sh. */
#include <math.h>

#include "io/crc32c.h"
#include "io/csv_log.h"
#include "test_io_util.h"

static char *slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    return buf;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    CHECK(crc32c("123456789", 9) == 0xe3069283u, "crc32c check value %#x", crc32c("123456789", 9));
    CHECK(crc32c("", 0) == 0, "crc32c of nothing");

    static const struct {
        double v;
        const char *repr;
    } reprs[] = {
        {0.0, "0.0"},           {1.0, "1.0"},       {0.1, "0.1"},         {2.0 / 3, "0.6666666666666666"},
        {1e-05, "1e-05"},       {1.5e-05, "1.5e-05"}, {0.0001, "0.0001"}, {1234567.0, "1234567.0"},
        {1e16, "1e+16"},        {123456789012345678.0, "1.2345678901234568e+17"},
        {2.279398361727412, "2.279398361727412"}, {412.5, "412.5"},       {-0.25, "-0.25"},
        {NAN, "nan"},           {INFINITY, "inf"},
    };
    for (size_t i = 0; i < sizeof reprs / sizeof reprs[0]; i++) {
        char out[40];
        csv_log_number(out, sizeof out, reprs[i].v);
        CHECK(strcmp(out, reprs[i].repr) == 0, "%.17g written as %s, Python's repr: %s", reprs[i].v, out,
              reprs[i].repr);
    }

    char *dir = make_temp_dir("test_watch_files"), path[4200], err[4400];
    struct csv_log c;
    snprintf(path, sizeof path, "%s/t.csv", dir);
    /* Rows 0..2 and a row cut short: a resume after 2 epochs keeps 0 and 1. */
    put(path, CSV_LOG_HEADER "\r\n0,0.1,2.0,0.1,2.0,10.0\r\n1,0.2,1.9,0.2,1.9,10.0\r\n2,0.3,1.8,0.3,1.8,10.0\r\n3,0.");
    CHECK(csv_log_open(&c, path, 2, err, sizeof err) == 0, "open: %s", err);
    CHECK(csv_log_row(&c, 2, 0.5, 1.5, 0.25, 1.75, 100.0, err, sizeof err) == 0, "row: %s", err);
    csv_log_close(&c);
    CHECK(strcmp(slurp(path), CSV_LOG_HEADER "\r\n0,0.1,2.0,0.1,2.0,10.0\r\n1,0.2,1.9,0.2,1.9,10.0\r\n"
                              "2,0.5,1.5,0.25,1.75,100.0\r\n") == 0, "after the resume: [%s]", slurp(path));
    /* A new run (0 epochs done) starts afresh with the header; a header cut short is written again. */
    CHECK(csv_log_open(&c, path, 0, err, sizeof err) == 0, "open: %s", err);
    csv_log_close(&c);
    CHECK(strcmp(slurp(path), CSV_LOG_HEADER "\r\n") == 0, "a new run: [%s]", slurp(path));
    put(path, "epoch,acc,lo");
    CHECK(csv_log_open(&c, path, 3, err, sizeof err) == -1, "a cut header is not ours");
    /* Another program's file: refused, untouched. */
    put(path, "time,value\r\n1,2\r\n");
    err[0] = 0;
    CHECK(csv_log_open(&c, path, 0, err, sizeof err) == -1, "a foreign CSV was opened");
    CHECK(strstr(err, "not a cifar-train CSV log") != NULL, "error: %s", err);
    CHECK(strcmp(slurp(path), "time,value\r\n1,2\r\n") == 0, "the foreign CSV changed: [%s]", slurp(path));
    rm_rf(dir);
    return check_exit("test_watch_files");
}
