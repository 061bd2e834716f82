#include "job_stop.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static FILE *open_regular(const char *dir, const char *name)
{
    char path[PATH_MAX + 300];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path || lstat(path, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return NULL;
    return fopen(path, "re");
}

/* The time of the attempt's warning line in the execution logs (render.c: "<time> attempt N: SIGUSR1: ..."). */
static void warning(const char *dir, long attempt, struct bai_job_stop *s)
{
    char tag[96], line[1024];
    snprintf(tag, sizeof tag, " attempt %ld: SIGUSR1: the time limit is near", attempt);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && !s->warned_at[0]) {
        FILE *f = strncmp(e->d_name, "execution-", 10) == 0 ? open_regular(dir, e->d_name) : NULL;
        while (f && fgets(line, sizeof line, f)) {
            char *p = strstr(line, tag);
            if (p) {
                snprintf(s->warned_at, sizeof s->warned_at, "%.*s", (int)(p - line), line);
                break;
            }
        }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
}

/* The path after `prefix` on a line, up to `end` (or the line's end), into s->checkpoint. */
static void take_path(const char *line, const char *prefix, const char *end, struct bai_job_stop *s)
{
    const char *p = line + strlen(prefix), *q = end ? strstr(p, end) : NULL;
    size_t n = q ? (size_t)(q - p) : strcspn(p, "\r\n");
    if (n && n < sizeof s->checkpoint)
        snprintf(s->checkpoint, sizeof s->checkpoint, "%.*s", (int)n, p);
}

/* The attempt's lines of stdout.txt follow its header (render.c: "batchai: attempt N of job ..."). */
static void checkpoint(const char *dir, long attempt, struct bai_job_stop *s)
{
    char head[64], line[PATH_MAX + 256];
    snprintf(head, sizeof head, "batchai: attempt %ld of job ", attempt);
    FILE *f = open_regular(dir, "stdout.txt");
    int mine = attempt == 1; /* a job with its own script has no header lines */
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "batchai: attempt ", 17) == 0)
            mine = strncmp(line, head, strlen(head)) == 0;
        else if (mine && strncmp(line, "Saved checkpoint at ", 20) == 0)
            take_path(line, "Saved checkpoint at ", NULL, s);
        else if (mine && strncmp(line, "Stopped: checkpoint ", 20) == 0)
            take_path(line, "Stopped: checkpoint ", "; ", s);
    }
    if (f)
        fclose(f);
}

void bai_job_stop_read(const char *dir, long attempt, struct bai_job_stop *s)
{
    memset(s, 0, sizeof *s);
    warning(dir, attempt, s);
    checkpoint(dir, attempt, s);
}
