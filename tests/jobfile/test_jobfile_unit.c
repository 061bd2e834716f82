/* Unit tests of the job-file library's pure parts: durations, bounds, settings, translation details that
 * golden files do not pin (secrets never rendered, "%j" expansion, settings errors), and the quoting of
 * strings into batch scripts, proven by running what was rendered through bash and sh. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "azureml.h"
#include "batchai_jobfile.h"
#include "checks.h"
#include "jsonv.h"
#include "sbuf.h"
#include "sha256.h"
#include "steps.h"
#include "yamltree.h"

#include "../check.h"

static const char minimal[] =
    "{\"properties\": {\"nodeCount\": 2, \"stdOutErrPathPrefix\": \"$AZ_BATCHAI_JOB_MOUNT_ROOT/logs\","
    " \"mountVolumes\": {\"azureFileShares\": [{\"azureFileUrl\": "
    "\"https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/logs\", \"relativeMountPath\": \"logs\"}]},"
    " \"secrets\": [{\"name\": \"API_TOKEN\", \"value\": \"s3cr3t-value\"}],"
    " \"environmentVariables\": [{\"name\": \"MODE\", \"value\": \"fast\"}],"
    " \"customMpiSettings\": {\"commandLine\": \"hostname\"}}}";

static bool diag_has(const struct bai_diag *d, const char *needle)
{
    for (size_t i = 0; i < d->count; i++)
        if (strstr(d->msg[i], needle))
            return true;
    return false;
}

static void test_durations(void)
{
    CHECK_INT(bai_parse_duration("7.00:00:00"), ==, 7 * 86400);
    CHECK_INT(bai_parse_duration("01:30:00"), ==, 5400);
    CHECK_INT(bai_parse_duration("1:30:00"), ==, 5400);
    CHECK_INT(bai_parse_duration("0.00:00:01"), ==, 1);
    CHECK_INT(bai_parse_duration("00:00:00"), ==, -1);
    CHECK_INT(bai_parse_duration("24:00:00"), ==, -1);
    CHECK_INT(bai_parse_duration("1.00:60:00"), ==, -1);
    CHECK_INT(bai_parse_duration("99999.00:00:00"), ==, -1);
    CHECK_INT(bai_parse_duration("P1D"), ==, -1);
    CHECK_INT(bai_parse_duration(""), ==, -1);
    CHECK_INT(bai_parse_duration("1."), ==, -1);
    CHECK_INT(bai_parse_duration("-1.00:00:00"), ==, -1);
}

/* FIPS 180-2's test vectors (one block, empty, the padding spilling into a second block) and a million 'a's. */
static void test_sha256(void)
{
    static const struct { const char *in; const char *hex; } v[] = {
        { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
        { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
        { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
    };
    char hex[BAI_SHA256_HEX_LEN + 1];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        bai_sha256_hex(v[i].in, strlen(v[i].in), hex);
        CHECK_STR(hex, v[i].hex);
    }
    char *a = malloc(1000000);
    CHECK(a != NULL);
    if (a) {
        memset(a, 'a', 1000000);
        bai_sha256_hex(a, 1000000, hex);
        CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        free(a);
    }
}

static void test_format_and_expand(void)
{
    char buf[32], *s;

    bai_format_time(7 * 86400, buf, sizeof buf);
    CHECK_STR(buf, "7-00:00:00");
    bai_format_time(5400, buf, sizeof buf);
    CHECK_STR(buf, "01:30:00");
    s = bai_expand_jobid("/a/%j/b%j", "42");
    CHECK(s && strcmp(s, "/a/42/b42") == 0);
    free(s);
    s = bai_expand_jobid("", "42");
    CHECK(s && strcmp(s, "") == 0);
    free(s);
}

static void test_bounds(void)
{
    struct bai_diag d = { 0 };
    struct bai_job job;
    size_t n = 3 * 1024 * 1024;
    char *big = malloc(n);

    /* A multi-megabyte file is refused by size before parsing. */
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    CHECK(bai_job_parse(big, n, &job, &d) == -1);
    CHECK(diag_has(&d, "larger than the limit"));
    bai_diag_free(&d);
    free(big);

    /* Hundreds of faults: the report is bounded, with a count of the rest. */
    struct bai_diag many = { 0 };
    for (int i = 0; i < 200; i++)
        bai_diag_add(&many, "x", "fault %d", i);
    CHECK(many.count == BAI_DIAG_MAX && bai_diag_total(&many) == 200);
    bai_diag_free(&many);

    /* Every fault is reported, not only the first. */
    const char *bad = "{\"properties\": {\"nodeCount\": \"four\", \"stdOutErrPathPrefix\": 3, \"typo\": 1}}";
    CHECK(bai_job_parse(bad, strlen(bad), &job, &d) == -1);
    CHECK(diag_has(&d, "properties.nodeCount: expected an integer from 1 to 100000, got \"four\""));
    CHECK(diag_has(&d, "properties.stdOutErrPathPrefix: expected a string, got 3"));
    CHECK(diag_has(&d, "properties.typo: unknown property"));
    CHECK(diag_has(&d, "got none"));
    bai_diag_free(&d);

    /* Invalid UTF-8 in a string. */
    const char *utf = "{\"nodeCount\": 1, \"stdOutErrPathPrefix\": \"/x\xff\", \"customMpiSettings\": "
                      "{\"commandLine\": \"a\"}}";
    CHECK(bai_job_parse(utf, strlen(utf), &job, &d) == -1);
    CHECK(diag_has(&d, "not valid UTF-8"));
    bai_diag_free(&d);
}

/* Whether parsing `text` reports a message that contains `needle`. */
static bool parse_says(const char *text, const char *needle)
{
    struct bai_diag d = { 0 };
    struct bai_job job;
    bool found;

    if (bai_job_parse(text, strlen(text), &job, &d) == 0)
        bai_job_free(&job);
    found = diag_has(&d, needle);
    bai_diag_free(&d);
    return found;
}

/* n entries, separated by commas: members "k<i>": 0 of an object, or zeros of an array. */
static void add_entries(struct sbuf *b, int n, bool members)
{
    for (int i = 0; i < n; i++) {
        if (members)
            sb_printf(b, "%s\"k%d\": 0", i ? ", " : "", i);
        else
            sb_puts(b, i ? ", 0" : "0");
    }
}

static char *container(const char *open, int n, bool members, const char *close)
{
    struct sbuf b = { 0 };

    sb_puts(&b, open);
    add_entries(&b, n, members);
    sb_puts(&b, close);
    return sb_finish(&b);
}

/* The bounds checked on the text: at each limit the file goes on to validation, one past it is refused
 * with the JSON path of the container (the hostile golden files test far past them). */
static void test_text_bounds(void)
{
    char deep[2 * BAI_JOB_MAX_DEPTH + 3], *s;

    for (int n = BAI_JOB_MAX_DEPTH; n <= BAI_JOB_MAX_DEPTH + 1; n++) {
        memset(deep, '[', (size_t)n);
        memset(deep + n, ']', (size_t)n);
        deep[2 * n] = '\0';
        CHECK(parse_says(deep, "nesting deeper than 32 levels") == (n > BAI_JOB_MAX_DEPTH));
    }
    s = container("{\"properties\": {\"x\": [", BAI_JOB_MAX_ITEMS, false, "]}}");
    CHECK(s && parse_says(s, "properties.x: unknown property") && !parse_says(s, "than the limit"));
    free(s);
    /* The 257th entry starts after the 22 characters of the opening, "0" and 255 of ", 0", and ", ". */
    s = container("{\"properties\": {\"x\": [", BAI_JOB_MAX_ITEMS + 1, false, "]}}");
    CHECK(s && parse_says(s, "properties.x: more entries than the limit of 256 in one array at line 1, column 791"));
    free(s);
    s = container("{\"properties\": {\"x\": {", BAI_JOB_MAX_ITEMS, true, "}}}");
    CHECK(s && parse_says(s, "properties.x: unknown property") && !parse_says(s, "than the limit"));
    free(s);
    s = container("{\"properties\": {\"x\": {", BAI_JOB_MAX_ITEMS + 1, true, "}}}");
    CHECK(s && parse_says(s, "properties.x: more members than the limit of 256 in one object at line 1, column"));
    free(s);
    /* A name that is not plain is quoted in the path. */
    s = container("{\"properties\": {\"a b\\\"\": [", BAI_JOB_MAX_ITEMS + 1, false, "]}}");
    CHECK(s && parse_says(s, "properties.\"a b\\\\\\\"\": more entries than the limit"));
    free(s);

    /* {"x": [255 arrays]}: the top, x, its 255 entries, 254 x 256 zeros and m more: 65,281 + m values. */
    for (int m = 255; m <= 256; m++) {
        struct sbuf b = { 0 };
        sb_puts(&b, "{\"x\": [");
        for (int i = 0; i < 255; i++) {
            sb_puts(&b, i ? ", [" : "[");
            add_entries(&b, i < 254 ? BAI_JOB_MAX_ITEMS : m, false);
            sb_puts(&b, "]");
        }
        sb_puts(&b, "]}");
        s = sb_finish(&b);
        CHECK(s && parse_says(s, "x[254]: more values than the limit of 65536 in one file") == (m == 256));
        free(s);
    }

    /* "$schema" is ignored, but not exempt from the bounds of strings. */
    CHECK(parse_says("{\"$schema\": 3, \"properties\": {}}", "$schema: expected a string, got 3"));
    s = malloc(BAI_JOB_MAX_STRING + 32);
    if (s) {
        size_t at = (size_t)sprintf(s, "{\"$schema\": \"");
        memset(s + at, 's', BAI_JOB_MAX_STRING + 1);
        strcpy(s + at + BAI_JOB_MAX_STRING + 1, "\"}");
    }
    CHECK(s && parse_says(s, "$schema: string of 65537 bytes is longer than the limit of 65536"));
    free(s);
}

static void test_settings(void)
{
    struct bai_settings s;
    struct bai_diag d = { 0 };
    char *p;

    CHECK(bai_settings_init(&s) == 0);
    CHECK(bai_settings_apply(&s, "share.logs=/data/logs", "test", false, &d) == 0);
    CHECK(bai_settings_apply(&s, "share.logs=/data/other", "test", false, &d) == -1);
    CHECK(diag_has(&d, "given twice"));
    CHECK(bai_settings_apply(&s, "shares_rot=/x", "test", false, &d) == -1);
    CHECK(diag_has(&d, "unknown setting \"shares_rot\""));
    CHECK(bai_settings_apply(&s, "job_root=relative", "test", false, &d) == -1);
    CHECK(bai_settings_apply(&s, "share.x=/a/../etc", "test", false, &d) == -1);
    CHECK(bai_settings_apply(&s, "priority.low=qos:scavenger", "test", false, &d) == 0);
    CHECK(bai_settings_apply(&s, "priority.urgent=qos:x", "test", false, &d) == -1);
    CHECK(bai_settings_apply(&s, "container_runtime=docker", "test", false, &d) == -1);
    CHECK(bai_settings_apply(&s, "settings_file=/etc/x", "test", false, &d) == -1);
    CHECK(bai_settings_apply(&s, "novalue", "test", false, &d) == -1);
    p = bai_settings_share_path(&s, "logs");
    CHECK(p && strcmp(p, "/data/logs") == 0);
    free(p);
    p = bai_settings_share_path(&s, "other");
    CHECK(p && strcmp(p, "/srv/batchai/shares/other") == 0);
    free(p);
    p = bai_settings_image_target(&s, "tensorflow/tensorflow:1.8.0-gpu");
    CHECK(p && strcmp(p, "/var/lib/batchai/images/tensorflow_tensorflow_1.8.0-gpu") == 0);
    free(p);
    CHECK(s.priority[BAI_PRIORITY_LOW].kind == BAI_PRIO_QOS);
    bai_diag_free(&d);
    bai_settings_free(&s);
}

/* Whether row r's field is the same in a and b (both from bai_settings_init, so padding is zero). */
static bool same_field(const struct bai_setting *r, const struct bai_settings *a, const struct bai_settings *b)
{
    const char *fa = (const char *)a + r->offset, *fb = (const char *)b + r->offset;

    if (r->map)
        return *(const size_t *)((const char *)a + r->count) == *(const size_t *)((const char *)b + r->count);
    switch (r->type) {
    case BAI_SET_PATH:
    case BAI_SET_STRING:
    case BAI_SET_GPUS:
        fa = *(char *const *)fa, fb = *(char *const *)fb;
        return fa == fb || (fa && fb && strcmp(fa, fb) == 0);
    case BAI_SET_BOOL:
        return memcmp(fa, fb, sizeof(bool)) == 0;
    case BAI_SET_INT:
    case BAI_SET_CHOICE:
        return memcmp(fa, fb, sizeof(int)) == 0;
    case BAI_SET_PRIORITY:
        return memcmp(fa, fb, sizeof(struct bai_prio_map)) == 0;
    case BAI_SET_INCLUDE:
        break;
    }
    return true;
}

/* The defaults as documented before the settings became a table, and every row of the table reachable by
 * its own key with a value of its type, into the field it names and no other. */
static void test_settings_table(void)
{
    struct bai_settings s, fresh;
    struct bai_diag d = { 0 };
    char word[256], key[128];

    CHECK(bai_settings_init(&s) == 0);
    CHECK(strcmp(s.shares_root, "/srv/batchai/shares") == 0 && strcmp(s.mount_root, "/srv/batchai/mounts") == 0);
    CHECK(strcmp(s.job_root, "/var/lib/batchai/jobs") == 0 && strcmp(s.image_root, "/var/lib/batchai/images") == 0);
    CHECK(strcmp(s.python, "python3") == 0 && strcmp(s.mpi, "pmix") == 0 && !s.partition);
    CHECK(s.runtime == BAI_RUNTIME_OCI && !s.allow_mount_command && s.gpus_per_node == 0);
    CHECK(s.priority[BAI_PRIORITY_LOW].kind == BAI_PRIO_NICE && s.priority[BAI_PRIORITY_LOW].nice == 100);
    CHECK(s.priority[BAI_PRIORITY_NORMAL].kind == BAI_PRIO_NONE && s.priority[BAI_PRIORITY_HIGH].kind == BAI_PRIO_NONE);
    CHECK(s.n_shares + s.n_images + s.n_clusters + s.n_environments + s.n_data == 0);
    bai_settings_free(&s);

    for (size_t i = 0; i < bai_setting_count; i++) {
        const struct bai_setting *r = &bai_setting_table[i];
        static const char *const sample[] = {
            [BAI_SET_PATH] = "/sample", [BAI_SET_STRING] = "sample", [BAI_SET_BOOL] = "yes",
            [BAI_SET_INT] = "7", [BAI_SET_PRIORITY] = "nice:7", [BAI_SET_GPUS] = "a100:2",
        };
        if (r->type == BAI_SET_INCLUDE)
            continue;
        snprintf(key, sizeof key, "%.*s%s", (int)(r->map ? strchr(r->key, '.') - r->key + 1 : (int)strlen(r->key)),
                 r->key, r->map ? "x" : "");
        /* A choice's last word, never its default; a yes/no the other way than its default. */
        snprintf(word, sizeof word, "%s=%s", key,
                 r->type == BAI_SET_CHOICE ? strrchr(r->arg, '|') + 1
                 : r->type == BAI_SET_BOOL && r->def && strcmp(r->def, "yes") == 0 ? "no" : sample[r->type]);
        CHECK(bai_settings_init(&s) == 0 && bai_settings_init(&fresh) == 0);
        CHECK(bai_settings_apply(&s, word, "test", false, &d) == 0);
        /* The row's field changed, and nothing the other rows name. */
        CHECK(!same_field(r, &s, &fresh));
        for (size_t j = 0; j < bai_setting_count; j++)
            if (j != i && !same_field(&bai_setting_table[j], &s, &fresh)) {
                fprintf(stderr, "%s also changed %s\n", word, bai_setting_table[j].key);
                CHECK(false);
            }
        bai_settings_free(&s);
        bai_settings_free(&fresh);
    }
    CHECK(d.count == 0);

    CHECK(bai_settings_init(&s) == 0);
    /* A bad value of each type, refused with a message naming the key, the expectation and the value. */
    static const struct { const char *word, *says; } bad[] = {
        { "gpus_per_node=1025", "gpus_per_node: expected an integer from 0 to 1024, got \"1025\"" },
        { "allow_mount_command=true", "allow_mount_command: expected yes or no, got \"true\"" },
        { "container_runtime=docker", "container_runtime: expected one of oci|pyxis|none, got \"docker\"" },
        { "priority.high=nice:x", "priority.high: expected qos:NAME, nice:N or none, got \"nice:x\"" },
        { "cluster.=gpu", "cluster.: the name after the dot is missing" },
        { "priority.=none", "unknown setting \"priority.\"" },
        { "gpus.nc6=a100", "gpus.nc6: expected N or TYPE:N (N from 0 to 1024), got \"a100\"" },
        { "gpus.nc6=:2", "gpus.nc6: expected N or TYPE:N" },
        { "gpus.nc6=a 1:2", "gpus.nc6: the value must not contain spaces" },
        { "gpus.nc6=a/b:2", "gpus.nc6: expected N or TYPE:N" },
        { "gpus.nc6=1025", "gpus.nc6: expected N or TYPE:N" },
        { "instance_type.x=-1", "instance_type.x: expected N or TYPE:N" },
        { "unmapped_cluster=default", "unmapped_cluster: expected one of refuse|partition, got \"default\"" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(bai_settings_apply(&s, bad[i].word, "test", false, &d) == -1);
        CHECK(diag_has(&d, bad[i].says));
    }
    CHECK(bai_settings_apply(&s, "container_runtime=pyxis", "test", false, &d) == 0 && s.runtime == BAI_RUNTIME_PYXIS);
    struct bai_gpus g;
    CHECK(bai_gpus_parse("a100:4", &g) == 0 && g.count == 4 && strcmp(g.type, "a100") == 0);
    CHECK(bai_gpus_parse("0", &g) == 0 && g.count == 0 && !g.type[0]);
    CHECK(bai_gpus_parse("+2", &g) == -1 && bai_gpus_parse("2x", &g) == -1 && bai_gpus_parse("a:b:2", &g) == -1);
    bai_diag_free(&d);
    bai_settings_free(&s);
}

static void test_translation(void)
{
    struct bai_settings s;
    struct bai_diag d = { 0 };
    struct bai_translate_opts opts = { .job_file = "dir/my job.job.json" };
    struct bai_plan plan;
    struct bai_job job;
    char *script;
    bool secret_seen = false;

    CHECK(bai_settings_init(&s) == 0);
    CHECK(bai_job_parse(minimal, strlen(minimal), &job, &d) == 0);
    CHECK(bai_translate(&job, &s, &opts, &plan, &d) == 0);
    CHECK_STR(plan.job_name, "my_job");
    CHECK(plan.nodes == 2 && plan.ntasks == 2);
    CHECK_STR(plan.log_dir, "/srv/batchai/shares/logs/my_job/%j/stdouterr");
    for (size_t i = 0; i < plan.n_env; i++)
        if (strcmp(plan.env[i].name, "API_TOKEN") == 0)
            secret_seen = plan.env[i].secret && strcmp(plan.env[i].value, "s3cr3t-value") == 0;
    CHECK(secret_seen);
    script = bai_render_script(&plan);
    CHECK(script && !strstr(script, "s3cr3t-value"));
    CHECK(script && strstr(script, "API_TOKEN=<secret"));
    CHECK(script && strstr(script, "#SBATCH --nodes=2\n"));
    free(script);
    bai_plan_free(&plan);

    /* A site without containers refuses container jobs; unmanaged mounts need the admin's consent. */
    CHECK(bai_settings_apply(&s, "container_runtime=none", "test", false, &d) == 0);
    const char *cont = "{\"nodeCount\": 1, \"stdOutErrPathPrefix\": \"/logs\", \"containerSettings\": "
                       "{\"imageSourceRegistry\": {\"image\": \"busybox\"}}, \"mountVolumes\": "
                       "{\"unmanagedFileSystems\": [{\"mountCommand\": \"mount -t nfs x\", \"relativeMountPath\": "
                       "\"nfs\"}]}, \"customToolkitSettings\": {\"commandLine\": \"true\"}}";
    struct bai_job job2;
    CHECK(bai_job_parse(cont, strlen(cont), &job2, &d) == 0);
    CHECK(bai_translate(&job2, &s, &opts, &plan, &d) == -1);
    CHECK(diag_has(&d, "properties.containerSettings.imageSourceRegistry.image: this site runs no containers"));
    bai_diag_free(&d);
    CHECK(bai_settings_apply(&s, "container_runtime=pyxis", "test", false, &d) == 0);
    CHECK(bai_translate(&job2, &s, &opts, &plan, &d) == 0);
    CHECK(bai_plan_check_host(&plan, &d) == -1);
    CHECK(diag_has(&d, "properties.mountVolumes.unmanagedFileSystems[0]: mountCommand is not allowed"));
    bai_plan_free(&plan);
    bai_diag_free(&d);

    /* pyxis: REGISTRY#IMAGE with the registry a bare host[:port], named once. */
    static const struct { const char *server, *image, *want; } reg[] = {
        { "https://myreg.azurecr.io", "myreg.azurecr.io/team/app:1.0", "--container-image='myreg.azurecr.io#team/app:1.0'" },
        { "myreg.io:5000", "app", "--container-image='myreg.io:5000#app'" },
        { "http://r.example/v2", "r.example/x@sha256:0123456789abcdef0123456789abcdef",
          "--container-image='r.example#x@sha256:0123456789abcdef0123456789abcdef'" },
    };
    for (size_t i = 0; i < sizeof reg / sizeof reg[0]; i++) {
        char text[512];
        struct bai_job jr;
        snprintf(text, sizeof text, "{\"nodeCount\": 1, \"stdOutErrPathPrefix\": \"/logs\", \"containerSettings\": "
                 "{\"imageSourceRegistry\": {\"serverUrl\": \"%s\", \"image\": \"%s\"}}, "
                 "\"customToolkitSettings\": {\"commandLine\": \"true\"}}", reg[i].server, reg[i].image);
        CHECK(bai_job_parse(text, strlen(text), &jr, &d) == 0);
        CHECK(bai_translate(&jr, &s, &opts, &plan, &d) == 0);
        CHECK(plan.container && strcmp(plan.container, reg[i].want) == 0);
        if (plan.container && strcmp(plan.container, reg[i].want) != 0)
            fprintf(stderr, "  got %s\n", plan.container);
        /* batchai-job exec gets the option unquoted, as one argv word (the plugin's BAI_CONTAINER_VAR). */
        char want[256];
        snprintf(want, sizeof want, "--container-image=%.*s", (int)strlen(reg[i].want) - 20, reg[i].want + 19);
        CHECK(plan.container_arg && strcmp(plan.container_arg, want) == 0);
        if (plan.container_arg && strcmp(plan.container_arg, want) != 0)
            fprintf(stderr, "  unquoted %s, want %s\n", plan.container_arg, want);
        bai_plan_free(&plan);
        bai_job_free(&jr);
        bai_diag_free(&d);
    }

    /* An OCI bundle: --container=BUNDLE, quoted for the script, unquoted for exec. */
    CHECK(bai_settings_apply(&s, "container_runtime=oci", "test", false, &d) == 0);
    CHECK(bai_settings_apply(&s, "image.busybox=/srv/images/busy_box", "test", false, &d) == 0);
    const char *oci = "{\"nodeCount\": 1, \"stdOutErrPathPrefix\": \"/logs\", \"containerSettings\": "
                      "{\"imageSourceRegistry\": {\"image\": \"busybox\"}}, "
                      "\"customToolkitSettings\": {\"commandLine\": \"true\"}}";
    struct bai_job jo;
    CHECK(bai_job_parse(oci, strlen(oci), &jo, &d) == 0);
    CHECK(bai_translate(&jo, &s, &opts, &plan, &d) == 0);
    CHECK(plan.container && strcmp(plan.container, "--container='/srv/images/busy_box'") == 0);
    CHECK(plan.container_arg && strcmp(plan.container_arg, "--container=/srv/images/busy_box") == 0);
    bai_plan_free(&plan);
    bai_job_free(&jo);
    bai_diag_free(&d);

    /* A log directory that escapes its share is refused. */
    const char *esc = "{\"nodeCount\": 1, \"stdOutErrPathPrefix\": \"$AZ_BATCHAI_JOB_MOUNT_ROOT/logs/../../etc\", "
                      "\"customToolkitSettings\": {\"commandLine\": \"true\"}}";
    struct bai_job job3;
    CHECK(bai_job_parse(esc, strlen(esc), &job3, &d) == 0);
    CHECK(bai_translate(&job3, &s, &opts, &plan, &d) == -1);
    CHECK(diag_has(&d, "properties.stdOutErrPathPrefix"));
    bai_diag_free(&d);

    bai_job_free(&job3);
    bai_job_free(&job2);
    bai_job_free(&job);
    bai_settings_free(&s);
}

/* ---- quoting: strings that reach a script arrive as themselves, one word, nothing run ---- */

/* Strings a job file could carry towards a script: every kind of shell syntax, line breaks, quotes. */
static const char *const hostile[] = {
    "ubuntu;touch pwned", "$(touch pwned)", "`touch pwned`", "a\nb", "a\r\nb", "two words", "it's", "'", "''",
    "\\", "\\'", "\"", "$HOME", "${IFS}", "*", "~", "#no comment", "-n", "", " ", "\t", "!!", "a|b&c>d<e",
    "x'; touch pwned; echo '", "\n#SBATCH --uid=0\ntouch pwned", "caf\xc3\xa9 \xe2\x80\xa8",
};
#define N_HOSTILE (sizeof hostile / sizeof hostile[0])

static char workdir[] = "/tmp/bai-unit-XXXXXX";

/* Run argv in the work directory with stdout to `out` (or /dev/null) and the extra environment `env`
 * (NAME=VALUE strings, NULL-terminated, may be NULL); its exit status, or -1. */
static int run(const char *const argv[], const char *out, const char *const env[])
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || chdir(workdir) != 0)
            _exit(126);
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *path_in_workdir(const char *name)
{
    char *p;
    return asprintf(&p, "%s/%s", workdir, name) < 0 ? NULL : p;
}

static bool write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0;

    if (f)
        ok = (fclose(f) == 0) && ok;
    return ok && chmod(path, mode) == 0;
}

/* The whole file (NUL bytes included) and its length, or NULL. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t cap = 0;

    *len = 0;
    if (!f)
        return NULL;
    for (size_t n = 1; n > 0; *len += n) {
        if (cap - *len < 4096) {
            char *grown = realloc(buf, cap += 65536);
            if (!grown)
                break;
            buf = grown;
        }
        n = fread(buf + *len, 1, cap - *len, f);
    }
    fclose(f);
    return buf;
}

static bool exists_in_workdir(const char *name)
{
    char *p = path_in_workdir(name);
    bool yes = p && access(p, F_OK) == 0;

    free(p);
    return yes;
}

/* Every hostile string, quoted by sb_shell_quote(), comes back from bash and from sh as exactly itself and
 * as one word: printf '%s\0' prints each of its arguments NUL-terminated, so a split word, a lost quote or
 * a command that ran would change the output. */
static void test_shell_quote(void)
{
    static const char *const shells[] = { "/bin/bash", "/bin/sh" };
    struct sbuf script = { 0 };
    char *text, *path = path_in_workdir("quote.sh"), *out = path_in_workdir("quote.out");

    for (size_t i = 0; i < N_HOSTILE; i++) {
        sb_puts(&script, "printf '%s\\0' ");
        sb_shell_quote(&script, hostile[i]);
        sb_puts(&script, "\n");
    }
    text = sb_finish(&script);
    CHECK(text && path && out && write_file(path, text, 0600));
    for (size_t k = 0; text && path && out && k < 2; k++) {
        const char *argv[] = { shells[k], path, NULL };
        size_t len = 0, at = 0, words = 0;
        char *got;
        CHECK(run(argv, out, NULL) == 0);
        got = read_file(out, &len);
        for (; got && words < N_HOSTILE && at < len; words++) {
            size_t n = strlen(hostile[words]);
            if (len - at <= n || memcmp(got + at, hostile[words], n) != 0 || got[at + n] != '\0')
                break;
            at += n + 1;
        }
        CHECK(words == N_HOSTILE && at == len);
        free(got);
    }
    CHECK(!exists_in_workdir("pwned"));
    free(text);
    free(path);
    free(out);
}

/* A buffer finished before anything was written is the empty string, terminated. */
static void test_empty_sbuf(void)
{
    struct sbuf b = { 0 };
    char *s;

    s = sb_finish(&b);
    CHECK(s && s[0] == '\0');
    free(s);
}

/* A comment line stays one line, whatever its value holds, and is never an #SBATCH directive. */
static void test_comment(void)
{
    for (size_t i = 0; i < N_HOSTILE; i++) {
        struct sbuf b = { 0 };
        char *line;
        sb_comment(&b, "%s", hostile[i]);
        line = sb_finish(&b);
        CHECK(line && strncmp(line, "# ", 2) == 0 && strchr(line, '\n') == line + strlen(line) - 1);
        CHECK(line && !strchr(line, '\r'));
        free(line);
    }
}

/* A whole batch script with hostile strings in it: an image and a registry that slipped past the validator
 * (set after parsing), a script path with spaces, a quote and shell punctuation, environment values with
 * line breaks and command substitutions. bash parses it, sbatch would see only our #SBATCH lines, and run
 * with srun and scontrol replaced by stubs it starts the interpreter with the script path as one word, gives
 * srun the container option as one word, and runs nothing else. */
static void test_rendered_script(void)
{
    static const char image[] = "ubuntu;touch pwned $(touch pwned)`touch pwned`\n'x'";
    static const char registry[] = "evil.io\";touch pwned;\"";
    static const char want_argv[] = "/mnt/job/it's (a) & b;c | d.py|--n|1|";
    struct bai_settings s;
    struct bai_diag d = { 0 };
    struct bai_translate_opts opts = { .job_file = "quote.json" };
    struct bai_plan plan;
    struct bai_job job;
    char setting[4200], *json = NULL, *script = NULL, *want = NULL, *log = NULL;
    char *argdump = path_in_workdir("argdump"), *script_path = path_in_workdir("job.sh");
    char *opts_out = path_in_workdir("srun.opts"), *argv_out = path_in_workdir("argv.out");
    const char *stub = "srun() { o=; while [ \"${1#--}\" != \"$1\" ]; do o=\"$o$1|\"; shift; done;"
                       " printf %s \"$o\" >srun.opts; \"$@\"; }; scontrol() { echo node1; }; . \"$1\"";
    size_t len;
    int n_sbatch = 0;

    CHECK(bai_settings_init(&s) == 0);
    snprintf(setting, sizeof setting, "shares_root=%s/shares", workdir);
    CHECK(bai_settings_apply(&s, setting, "test", false, &d) == 0);
    CHECK(bai_settings_apply(&s, "container_runtime=pyxis", "test", false, &d) == 0);
    CHECK(argdump && write_file(argdump, "#!/bin/sh\nprintf '%s|' \"$@\" >argv.out\n", 0700));
    CHECK(asprintf(&json, "{\"nodeCount\": 1, \"stdOutErrPathPrefix\": \"$AZ_BATCHAI_JOB_MOUNT_ROOT/s/logs\","
                   " \"mountVolumes\": {\"azureFileShares\": [{\"azureFileUrl\": \"https://a.file.core.windows.net/s\","
                   " \"relativeMountPath\": \"s\"}]},"
                   " \"containerSettings\": {\"imageSourceRegistry\": {\"image\": \"ubuntu\"}},"
                   " \"environmentVariables\": [{\"name\": \"A\", \"value\": \"$(touch pwned)`touch pwned`\"},"
                   " {\"name\": \"B\", \"value\": \"x\\n#SBATCH --uid=0\\ntouch pwned\"}],"
                   " \"chainerSettings\": {\"pythonInterpreterPath\": \"%s\", \"pythonScriptFilePath\":"
                   " \"${AZ_BATCHAI_JOB_MOUNT_ROOT}/it's (a) & b;c | d.py\", \"commandLineArgs\": \"--n 1\"}}",
                   argdump) > 0);
    if (!json || bai_job_parse(json, strlen(json), &job, &d) != 0) {
        bai_diag_print(&d, stderr, "test_rendered_script: ");
        CHECK(!"the job parses");
        goto out;
    }
    free(job.image);
    job.image = strdup(image);
    job.registry_server = strdup(registry);
    if (bai_translate(&job, &s, &opts, &plan, &d) != 0) {
        bai_diag_print(&d, stderr, "test_rendered_script: ");
        CHECK(!"the job translates");
        bai_job_free(&job);
        goto out;
    }
    script = bai_render_script(&plan);
    CHECK(script && script_path && write_file(script_path, script, 0600));
    log = bai_expand_jobid(plan.log_dir, "1");
    bai_plan_free(&plan);
    bai_job_free(&job);

    /* What sbatch reads: the #SBATCH lines we wrote, nothing from the job's strings. */
    for (const char *line = script; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (strncmp(line, "#SBATCH", 7) == 0) {
            n_sbatch++;
            CHECK(strncmp(line, "#SBATCH --uid", 13) != 0);
        }
    CHECK(n_sbatch == 7); /* name, nodes, ntasks, time, output, error, open-mode */

    const char *bash_n[] = { "/bin/bash", "-n", script_path, NULL };
    CHECK(run(bash_n, NULL, NULL) == 0);
    const char *mkdir_log[] = { "/bin/mkdir", "-p", log, NULL };
    CHECK(log && run(mkdir_log, NULL, NULL) == 0);
    const char *job_run[] = { "/bin/bash", "-c", stub, "bash", script_path, NULL };
    /* BAI_PREPARED_VAR: what the plugin's task context sets on a node it prepared. */
    const char *env[] = { "SLURM_JOB_ID=1", "SLURM_PROCID=0", "SLURMD_NODENAME=node1", BAI_PREPARED_VAR "=1:node1",
                          "AZ_BATCHAI_MPI_HOST_FILE=hostfile", "AZ_BATCHAI_JOB_MOUNT_ROOT=/mnt/job", NULL };
    CHECK(run(job_run, NULL, env) == 0);

    char *got = read_file(opts_out, &len);
    CHECK(asprintf(&want, "--mpi=pmix|--kill-on-bad-exit=1|--ntasks=1|--container-image=%s#%s|", registry, image) > 0);
    CHECK(got && want && len == strlen(want) && memcmp(got, want, len) == 0);
    free(got);
    got = read_file(argv_out, &len);
    CHECK(got && len == strlen(want_argv) && memcmp(got, want_argv, len) == 0);
    free(got);
    CHECK(!exists_in_workdir("pwned"));
out:
    bai_diag_free(&d);
    bai_settings_free(&s);
    free(json); free(script); free(want); free(log);
    free(argdump); free(script_path); free(opts_out); free(argv_out);
}

static void test_quoting(void)
{
    if (!mkdtemp(workdir)) {
        CHECK(!"mkdtemp");
        return;
    }
    test_shell_quote();
    test_comment();
    test_rendered_script();
    const char *rm[] = { "/bin/rm", "-rf", workdir, NULL };
    CHECK(run(rm, NULL, NULL) == 0);
}

/* The YAML reader's scalars, and the door telling the formats apart by content. */
static void test_yaml(void)
{
    static const char doc[] = "a: 0.2\nb: '0.2'\nc:\nd: true\ne: 1e3\nf: .5x\ng: -7\n";
    struct bai_diag d = { 0 };
    struct bai_job job;
    cJSON *t = bai_yaml_tree(doc, strlen(doc), &d);

    CHECK(t && bai_diag_total(&d) == 0);
    if (t) {
        const cJSON *a = jv_get(t, "a"), *b = jv_get(t, "b"), *e = jv_get(t, "e"), *g = jv_get(t, "g");
        CHECK(cJSON_IsNumber(a) && a->valuedouble == 0.2 && strcmp(a->valuestring, "0.2") == 0);
        CHECK(cJSON_IsString(b) && strcmp(b->valuestring, "0.2") == 0);
        CHECK(cJSON_IsNull(jv_get(t, "c")));
        CHECK(cJSON_IsTrue(jv_get(t, "d")));
        CHECK(cJSON_IsNumber(e) && e->valuedouble == 1000);
        CHECK(cJSON_IsString(jv_get(t, "f")));
        CHECK(cJSON_IsNumber(g) && g->valuedouble == -7);
        cJSON_Delete(t);
    }
    /* The same command job as YAML and as JSON; a job.json with "command" inside "properties" stays one. */
    static const char yaml_job[] = "command: echo ${{inputs.x}}\ninputs: {x: 1}\nresources: {instance_count: 3}\n";
    static const char json_job[] = "{\"command\": \"echo ${{inputs.x}}\", \"inputs\": {\"x\": 1.5}, "
                                   "\"resources\": {\"instance_count\": 3}}";
    CHECK(bai_job_parse(yaml_job, strlen(yaml_job), &job, &d) == 0 && job.aml && job.node_count == 3);
    CHECK(job.aml && job.aml->n_io == 1 && strcmp(job.aml->io[0].value, "1") == 0);
    bai_job_free(&job);
    CHECK(bai_job_parse(json_job, strlen(json_job), &job, &d) == 0 && job.aml && job.node_count == 3);
    CHECK(job.aml && job.aml->n_io == 1 && strcmp(job.aml->io[0].value, "1.5") == 0);
    bai_job_free(&job);
    CHECK(bai_diag_total(&d) == 0);
    static const char bai_yaml[] = "properties:\n  command: x\n";
    CHECK(bai_job_parse(bai_yaml, strlen(bai_yaml), &job, &d) == -1 && bai_diag_total(&d) > 0);
    bai_diag_free(&d);
}

/* The node check goes inside single-quoted wrappers of the rendered script: no single quote in it; it tests
 * the variable the plugin sets against this task's job and node, and fails the task. */
static void test_node_check(void)
{
    CHECK(strchr(bai_node_check, '\'') == NULL);
    CHECK(strstr(bai_node_check, "\"${" BAI_PREPARED_VAR "-}\" = \"$SLURM_JOB_ID:$SLURMD_NODENAME\"") != NULL);
    CHECK(strstr(bai_node_check, "exit 1; }") != NULL);
}

/* The main step of a job with commandLine `command`, x-checkpointable `opt` ("" for none): its rendered script. */
static char *custom_script(const char *command, const char *opt)
{
    struct bai_settings s;
    struct bai_diag d = { 0 };
    struct bai_plan plan;
    struct bai_job job;
    char text[512], *script = NULL;

    snprintf(text, sizeof text, "{\"nodeCount\": 1, \"stdOutErrPathPrefix\": \"/logs\",%s "
             "\"customToolkitSettings\": {\"commandLine\": \"%s\"}}", opt, command);
    CHECK(bai_settings_init(&s) == 0);
    if (bai_job_parse(text, strlen(text), &job, &d) == 0) {
        if (bai_translate(&job, &s, NULL, &plan, &d) == 0) {
            script = bai_render_script(&plan);
            bai_plan_free(&plan);
        }
        bai_job_free(&job);
    }
    bai_diag_free(&d);
    bai_settings_free(&s);
    return script;
}

/* The opt-in, for any command: exec'd, warned before the time limit, requeued; without it neither warned nor
 * requeued, the bundled trainer's name included (a one-command line is exec'd in every job). */
static void test_checkpointable(void)
{
    const char *opt = " \"x-checkpointable\": true,";
    char *with = custom_script("my-trainer --resume latest 2>&1", opt);
    char *without = custom_script("my-trainer --resume latest 2>&1", "");
    char *trainer = custom_script("cifar-train --data d", "");
    char *execs = custom_script(" exec my-trainer", opt);

    CHECK(with && strstr(with, "#SBATCH --signal=B:USR1@60\n#SBATCH --requeue\n"));
    CHECK(with && strstr(with, "\nexec my-trainer --resume latest 2>&1' &\nmain=$!\n"));
    CHECK(with && strstr(with, "kill -USR1 \"$main\""));
    CHECK(without && !strstr(without, "--signal") && !strstr(without, "--requeue") && !strstr(without, "USR1"));
    /* Without the opt-in a one-command line is exec'd too (SIGTERM reaches the program), but not warned. */
    CHECK(without && strstr(without, "\nexec my-trainer --resume latest 2>&1'\nrc=$?\n"));
    CHECK(trainer && !strstr(trainer, "--signal") && !strstr(trainer, "--resume"));
    CHECK(execs && strstr(execs, "\n exec my-trainer' &\n") && !strstr(execs, "exec exec"));
    free(with);
    free(without);
    free(trainer);
    free(execs);

    static const struct {
        const char *command, *fault; /* NULL: none */
    } cases[] = {
        { "train --out x 2>&1 </dev/null", NULL },
        { "train; echo done", "found ';'" },
        { "train && echo done", "found '&'" },
        { "train &", "found '&'" },
        { "train | tee log", "found '|'" },
        { "train\nmore", "found '\\n'" },
        { "(train)", "cannot start with '('" },
        { "  if true", "cannot start with 'if'" },
        { "X=1 train", "variable assignment (set X in" },
        { "   ", "needs a command" },
        /* Quoted or escaped, a separator is the program's: one command each. */
        { "sh -c 'trap \"exit 3\" TERM; while :; do sleep 1; done' out", NULL },
        { "python -c \"import sys; print(sys.argv)\" a|b", "found '|'" },
        { "python -c \"import sys; print(sys.argv[1])\" 'a|b'", NULL },
        { "echo it\\'s; done", "found ';'" },
        { "echo a\\;b \"q\\\"; r\"", NULL },
        { "sh -c 'a; b", "a ' quote is never closed" },
        { "echo \"a; b", "a \" quote is never closed" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct bai_diag d = { 0 };
        bai_check_one_command(&d, "p", cases[i].command);
        bool ok = cases[i].fault ? d.count == 1 && diag_has(&d, cases[i].fault) : d.count == 0;
        if (!ok)
            fprintf(stderr, "bai_check_one_command(\"%s\"): %s\n", cases[i].command, d.count ? d.msg[0] : "no fault");
        CHECK(ok);
        bai_diag_free(&d);
        /* One command that is a program: exec'd in every job (checks.h). */
        CHECK(bai_command_can_exec(cases[i].command) == !cases[i].fault, "bai_command_can_exec(\"%s\")",
              cases[i].command);
    }
    static const char *const builtins[] = { "cd /data", "exit 3", ": nothing", "export X=1", ". ./env.sh", "exec x" };
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        CHECK(!bai_command_can_exec(builtins[i]), "bai_command_can_exec(\"%s\") for a builtin", builtins[i]);
}

int main(void)
{
    test_node_check();
    test_durations();
    test_sha256();
    test_format_and_expand();
    test_bounds();
    test_text_bounds();
    test_settings();
    test_settings_table();
    test_translation();
    test_checkpointable();
    test_quoting();
    test_empty_sbuf();
    test_yaml();
    return check_exit("jobfile_unit");
}
