/* The plan's wire format (spank/plan_wire.c) and root's hold on a plan (spank/plan_child.c, bai_plan_hold),
 * under ASan and UBSan: a plan survives the round trip; every prefix of it, a changed magic, an unknown,
 * repeated or missing record, a length past the end, a NUL inside a value and trailing bytes are refused;
 * root refuses a plan for another job, uid or file, and one whose paths leave the site's roots. */
#include <stdlib.h>
#include <string.h>

#include "plan_child.h"
#include "plan_wire.h"

#include "../check.h"

#define DIGEST "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static struct bai_plan_mount mounts[2];
static struct bai_plan_env env[2];

static struct bai_wire_plan sample(void)
{
    struct bai_wire_plan w = {.jobid = 42, .uid = 1001};
    strcpy(w.digest, DIGEST);
    mounts[0] = (struct bai_plan_mount){.target = "/jobs/%j/mounts/myshare", .site_path = "/shares/myshare",
                                        .share = "myshare"};
    mounts[1] = (struct bai_plan_mount){.target = "/jobs/%j/mounts/nfs"};
    env[0] = (struct bai_plan_env){.name = "AZ_BATCHAI_JOB_NAME", .value = "x"};
    env[1] = (struct bai_plan_env){.name = "TOKEN", .value = "s3cret\nline 2", .secret = 1};
    w.plan = (struct bai_plan){.job_dir = "/jobs/%j", .log_dir = "/shares/myshare/logs/x/%j/stdouterr",
                               .secrets_file = "/jobs/%j/secrets.env", .mounts = mounts, .n_mounts = 2,
                               .env = env, .n_env = 2};
    return w;
}

static int read_back(const char *buf, size_t len, char *why)
{
    struct bai_wire_plan r;
    int rc = bai_wire_plan_read(buf, len, &r, why);
    bai_plan_free(&r.plan);
    return rc;
}

static void test_round_trip(void)
{
    struct bai_wire_plan w = sample(), r;
    size_t len;
    char why[BAI_WIRE_WHY_MAX];
    char *buf = bai_wire_plan_write(&w, &len);
    REQUIRE(buf != NULL, "write");
    CHECK_INT(bai_wire_plan_read(buf, len, &r, why), ==, 0);
    CHECK_INT(r.jobid, ==, 42);
    CHECK_INT(r.uid, ==, 1001);
    CHECK_STR(r.digest, DIGEST);
    CHECK_STR(r.plan.job_dir, "/jobs/%j");
    CHECK_STR(r.plan.secrets_file, "/jobs/%j/secrets.env");
    CHECK_INT(r.plan.n_mounts, ==, 2);
    CHECK_STR(r.plan.mounts[0].site_path, "/shares/myshare");
    CHECK(r.plan.mounts[1].site_path == NULL && r.plan.mounts[1].share == NULL, "unmanaged mount");
    CHECK_INT(r.plan.n_env, ==, 2);
    CHECK_STR(r.plan.env[1].value, "s3cret\nline 2");
    CHECK_INT(r.plan.env[1].secret, ==, 1);
    bai_plan_free(&r.plan);
    /* Every proper prefix is refused, and so is one byte more. */
    int accepted = 0;
    for (size_t n = 0; n < len; n++)
        accepted += read_back(buf, n, why) == 0;
    CHECK_INT(accepted, ==, 0);
    char *more = malloc(len + 1);
    memcpy(more, buf, len);
    more[len] = 'Z';
    CHECK_INT(read_back(more, len + 1, why), ==, -1);
    CHECK(strstr(why, "ends inside") != NULL || strstr(why, "after") != NULL, "%s", why);
    free(more);
    free(buf);
}

/* The sample's bytes with the first `from` replaced by `to` (as long) must be refused with `want`. */
#define REFUSED(from, to, want) refused_after(from, sizeof(from) - 1, to, sizeof(to) - 1, want)
static void refused_after(const char *from, size_t from_len, const char *to, size_t to_len, const char *want)
{
    struct bai_wire_plan w = sample();
    size_t len;
    char why[BAI_WIRE_WHY_MAX];
    char *buf = bai_wire_plan_write(&w, &len);
    char *at = memmem(buf, len, from, from_len);
    REQUIRE(at != NULL && to_len == from_len, "%s", want);
    memcpy(at, to, to_len);
    CHECK_INT(read_back(buf, len, why), ==, -1);
    CHECK(strstr(why, want) != NULL, "%s: %s", want, why);
    free(buf);
}

static void test_malformed(void)
{
    REFUSED("BAIPLAN1", "BAIPLAN2", "does not start");
    REFUSED("U\0\0\0\0041001", "J\0\0\0\0041001", "twice");
    REFUSED("U\0\0\0\0041001", "q\0\0\0\0041001", "unknown record");
    REFUSED("U\0\0\0\0041001", "U\0\0\0\0041x01", "uid is not a number");
    REFUSED("U\0\0\0\004", "U\0\0\xff\xff", "past the end");
    REFUSED("/shares/myshare/logs", "/shares/my\0hare/logs", "NUL");
    REFUSED("J\0\0\0\00242", "s\0\0\0\00242", "twice"); /* s appears twice now */
    /* The fuzzer's find: a digest record whose 64 digits are followed by more hex digits up to the end of
     * the buffer (no NUL anywhere): the reader must not read past the 64 (ASan checks the exact-size copy). */
    static const char digest_at_end[] = "BAIPLAN1J\0\0\0\00210U\0\0\0\0041000D\0\0\0@"
                                        "13c4f817a9d83593754df878ba7d87f38afce6f8d290763d8a0e73ed5b161174"
                                        "a73d8a0e73ed5b161174a717";
    char *tight = malloc(sizeof digest_at_end - 1);
    REQUIRE(tight != NULL, "out of memory");
    memcpy(tight, digest_at_end, sizeof digest_at_end - 1);
    char why[BAI_WIRE_WHY_MAX];
    CHECK_INT(read_back(tight, sizeof digest_at_end - 1, why), ==, -1);
    free(tight);
}

static void test_hold(void)
{
    struct bai_settings site;
    struct bai_diag d = {0};
    char why[BAI_WHY_MAX];
    REQUIRE(bai_settings_init(&site) == 0, "settings");
    bai_settings_apply(&site, "job_root=/jobs", "t", false, &d);
    bai_settings_apply(&site, "shares_root=/shares", "t", false, &d);
    REQUIRE(bai_diag_total(&d) == 0, "site");
    struct bai_wire_plan w = sample();
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, DIGEST, why), ==, 0);
    CHECK_INT(bai_plan_hold(&w, &site, 43, 1001, DIGEST, why), ==, -1);
    CHECK(strstr(why, "for job 42") != NULL, "%s", why);
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1002, DIGEST, why), ==, -1);
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", why), ==, -1);
    mounts[0].site_path = "/etc";
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, DIGEST, why), ==, -1);
    CHECK(strstr(why, "/etc") != NULL, "%s", why);
    mounts[0].site_path = "/shares/myshare";
    mounts[1].target = "/jobs/%j/mounts/../../etc";
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, DIGEST, why), ==, -1);
    mounts[1].target = "/jobs/%j/mounts";
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, DIGEST, why), ==, -1);
    mounts[1].target = "/jobs/%j/mounts/nfs";
    w.plan.job_dir = "/elsewhere/%j";
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, DIGEST, why), ==, -1);
    w.plan.job_dir = "/jobs/%j";
    w.plan.log_dir = "/shares/../etc";
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, DIGEST, why), ==, -1);
    w.plan.log_dir = "/shares/x";
    w.plan.secrets_file = "/etc/shadow";
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, DIGEST, why), ==, -1);
    w.plan.secrets_file = NULL;
    env[0].name = "BAD NAME";
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, DIGEST, why), ==, -1);
    env[0].name = "OK";
    CHECK_INT(bai_plan_hold(&w, &site, 42, 1001, DIGEST, why), ==, 0);
    bai_settings_free(&site);
}

int main(void)
{
    test_round_trip();
    test_malformed();
    test_hold();
    return check_exit("test_plan_wire");
}
