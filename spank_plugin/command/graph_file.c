/* batchai-job's pipeline and sweep files: see graph_file.h. */
#include "graph_file.h"

#include <cJSON.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobfile/batchai_jobfile.h"
#include "write_all.h"

bool bai_graph_file_is(const char *path, bool (*detect)(const char *text, size_t len))
{
    struct bai_diag d = { 0 };
    char *text = NULL;
    size_t len = 0;
    bool yes = bai_job_read(path, &text, &len, &d) == 0 && detect(text, len);
    free(text);
    bai_diag_free(&d);
    return yes;
}

int bai_graph_paths(const char *path, const char *name, char *file, size_t file_size, char *base, size_t base_size)
{
    char cwd[PATH_MAX] = "";
    const char *rel = path;
    while (rel[0] == '.' && rel[1] == '/')
        for (rel += 2; rel[0] == '/'; rel++)
            ;
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    if (snprintf(file, file_size, "%s%s%s", path[0] == '/' ? "" : cwd, path[0] == '/' ? "" : "/",
                 path[0] == '/' ? path : rel) >= (int)file_size) {
        fprintf(stderr, "%s: the path is too long\n", path);
        return -1;
    }
    const char *slash = strrchr(file, '/'), *stem = slash + 1;
    size_t n = strlen(stem);
    if (n > 4 && strcmp(stem + n - 4, ".yml") == 0)
        n -= 4;
    else if (n > 5 && strcmp(stem + n - 5, ".yaml") == 0)
        n -= 5;
    if (snprintf(base, base_size, "%.*s/%.*s", (int)(slash - file), file, name ? (int)strlen(name) : (int)n,
                 name ? name : stem) >= (int)base_size) {
        fprintf(stderr, "%s: the path is too long\n", path);
        return -1;
    }
    return 0;
}

uint64_t bai_graph_seed(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return ((uint64_t)t.tv_nsec ^ (uint64_t)t.tv_sec ^ (uint64_t)getpid() << 16) & 0x7fffffff;
}

int bai_text_read(void *arg, const char *path, char **text, size_t *len, struct bai_diag *d)
{
    (void)path;
    *text = strdup(arg);
    *len = *text ? strlen(*text) : 0;
    if (!*text)
        bai_diag_add(d, "", "out of memory");
    return *text ? 0 : -1;
}

cJSON *bai_read_json(const char *path, struct bai_diag *d)
{
    struct bai_diag own = { 0 };
    char *text = NULL;
    size_t len = 0;
    cJSON *r = NULL;
    if (bai_job_read(path, &text, &len, d ? d : &own) == 0)
        r = cJSON_ParseWithLength(text, len);
    free(text);
    bai_diag_free(&own);
    return r;
}

int bai_write_file_atomic(const char *path, const char *text)
{
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -1;
    if (bai_write_all(fd, text, strlen(text)) != 0) {
        close(fd);
        unlink(tmp);
        return -1;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}
