/* Slurm's commands run without a shell, and their one-line records read by known keys (see slurm_read.h for
 * why text was chosen over libslurm and --json). */
#include "slurm_read.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct grow {
    char *p;
    size_t len, cap;
    int fd;
};

static int grow_read(struct grow *g)
{
    if (g->cap - g->len < 4097) {
        size_t cap = g->cap ? g->cap * 2 : 8192;
        char *np = realloc(g->p, cap);
        if (!np)
            return -1;
        g->p = np;
        g->cap = cap;
    }
    ssize_t n = read(g->fd, g->p + g->len, g->cap - g->len - 1);
    if (n < 0 && errno == EINTR)
        return 1;
    if (n <= 0)
        return 0;
    g->len += (size_t)n;
    return 1;
}

/* Where run() sends the standard error. */
enum err_to { ERR_FIRST_LINE, ERR_MERGED, ERR_INHERITED };

/* bai_run, with the standard error as `to` says (*err: its first line), and the output's length into *out_len
 * when it is not NULL. */
static int run(char *const argv[], char **out, size_t *out_len, char **err, enum err_to to)
{
    int po[2], pe[2], st = -1;
    pid_t pid;
    posix_spawn_file_actions_t fa;
    struct grow g[2] = {{.fd = -1}, {.fd = -1}};
    char *spawn_err = NULL;
    *out = NULL;
    if (out_len)
        *out_len = 0;
    if (err)
        *err = NULL;
    if (pipe2(po, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]);
        close(po[1]);
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    if (to != ERR_INHERITED)
        posix_spawn_file_actions_adddup2(&fa, to == ERR_FIRST_LINE ? pe[1] : po[1], 2);
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(po[1]);
    close(pe[1]);
    g[0].fd = po[0];
    g[1].fd = pe[0];
    if (rc != 0) {
        close(po[0]);
        close(pe[0]);
        if (asprintf(&spawn_err, "cannot run %s: %s", argv[0], strerror(rc)) < 0)
            spawn_err = NULL;
        if (to == ERR_FIRST_LINE)
            *err = spawn_err;
        else if (to == ERR_MERGED)
            *out = spawn_err;
        else {
            fprintf(stderr, "%s\n", spawn_err ? spawn_err : "cannot run a command");
            free(spawn_err);
        }
        return -1;
    }
    for (int open_fds = 2; open_fds > 0;) {
        struct pollfd pf[2] = {{.fd = g[0].fd, .events = POLLIN}, {.fd = g[1].fd, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++)
            if (g[i].fd >= 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                int r = grow_read(&g[i]);
                if (r <= 0) {
                    close(g[i].fd);
                    g[i].fd = -1;
                    open_fds--;
                }
            }
    }
    for (int i = 0; i < 2; i++)
        if (g[i].fd >= 0)
            close(g[i].fd);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    for (int i = 0; i < 2; i++) {
        if (!g[i].p)
            g[i].p = calloc(1, 1);
        else
            g[i].p[g[i].len] = '\0';
    }
    if (g[1].p)
        g[1].p[strcspn(g[1].p, "\n")] = '\0';
    *out = g[0].p;
    if (out_len)
        *out_len = g[0].len;
    if (err)
        *err = g[1].p;
    else
        free(g[1].p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

int bai_run(char *const argv[], char **out, char **err)
{
    return run(argv, out, NULL, err, ERR_FIRST_LINE);
}

int bai_run_merged(char *const argv[], char **out)
{
    return run(argv, out, NULL, NULL, ERR_MERGED);
}

int bai_run_bytes(char *const argv[], char **out, size_t *len)
{
    return run(argv, out, len, NULL, ERR_INHERITED);
}

/* The keys `scontrol -o show job` prints (22.05 through 26.05). A value runs up to the next " Key=" of this
 * list, so spaces inside a value stay; a value that itself holds " JobState=" (a comment the user wrote) is
 * the one way to confuse it, and only about the user's own job. */
const char *const bai_job_keys[] = {
    "JobId", "ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId", "HetJobOffset", "HetJobIdSet",
    "JobName", "UserId", "GroupId", "MCS_label", "Priority", "Nice", "Account", "QOS", "WCKey", "JobState",
    "Reason", "Dependency", "Requeue", "Restarts", "BatchFlag", "Reboot", "ExitCode", "DerivedExitCode",
    "RunTime", "TimeLimit", "TimeMin", "SubmitTime", "EligibleTime", "AccrueTime", "StartTime", "EndTime",
    "Deadline", "PreemptEligibleTime", "PreemptTime", "SuspendTime", "SecsPreSuspend", "LastSchedEval",
    "Scheduler", "Partition", "AllocNode:Sid", "ReqNodeList", "ExcNodeList", "NodeList", "SchedNodeList",
    "BatchHost", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task", "ReqB:S:C:T", "ReqTRES", "AllocTRES", "TRES",
    "Socks/Node", "NtasksPerN:B:S:C", "CoreSpec", "MinCPUsNode", "MinMemoryNode", "MinMemoryCPU",
    "MinTmpDiskNode", "Features", "ClusterFeatures", "Prefer", "DelayBoot", "OverSubscribe", "Contiguous",
    "Licenses", "LicensesAlloc", "Network", "Command", "WorkDir", "AdminComment", "SystemComment", "Comment",
    "StdErr", "StdIn", "StdOut", "StdOutExpanded", "StdErrExpanded", "StdInExpanded", "Power", "TresPerNode",
    "TresPerJob", "TresPerTask", "TresPerSocket", "CpusPerTres", "MemPerTres", "MailUser", "MailType",
    "NtasksPerTRES", "Reservation", "ResvPort", "ThreadSpec", "CPU_IDs", "Mem",
    "GRES", "BurstBuffer", "BurstBufferState", "KillOInInvalidDependent", "Container", "ContainerID",
    "Segment", "Selinux", "OOMKillStep", "NtasksPerTres", "EnergyConsumed", "SLUID", "Nodes", NULL,
};

/* The keys of `scontrol -o show node`. */
const char *const bai_node_keys[] = {
    "NodeName", "Arch", "CoresPerSocket", "CPUAlloc", "CPUEfctv", "CPUTot", "CPULoad", "AvailableFeatures",
    "ActiveFeatures", "Gres", "GresDrain", "GresUsed", "NodeAddr", "NodeHostName", "Port", "Version", "OS",
    "RealMemory", "AllocMem", "FreeMem", "Sockets", "Boards", "MemSpecLimit", "CoreSpecCount", "CPUSpecList",
    "State", "ThreadsPerCore", "TmpDisk", "Weight", "Owner", "MCS_label", "Partitions", "BootTime",
    "SlurmdStartTime", "LastBusyTime", "ResumeAfterTime", "CfgTRES", "AllocTRES", "CapWatts", "CurrentWatts",
    "AveWatts", "ExtSensorsJoules", "ExtSensorsWatts", "ExtSensorsTemp", "Reason", "Comment", "InstanceId",
    "InstanceType", "Topology", "Extra", "ReservationName", "NextState", NULL,
};

/* Whether s starts with one of keys followed by '='; its length then, else 0. */
static size_t known_key(const char *const keys[], const char *s)
{
    for (int i = 0; keys[i]; i++) {
        size_t n = strlen(keys[i]);
        if (strncmp(s, keys[i], n) == 0 && s[n] == '=')
            return n;
    }
    return 0;
}

void bai_record_parse(struct bai_record *rec, char *line, const char *const keys[])
{
    rec->text = line;
    rec->n = 0;
    line[strcspn(line, "\n")] = '\0';
    char *p = line;
    while (*p == ' ')
        p++;
    while (*p && rec->n < sizeof rec->kv / sizeof rec->kv[0]) {
        size_t klen = known_key(keys, p);
        if (!klen) { /* not a key: skip to the next word */
            char *sp = strchr(p, ' ');
            if (!sp)
                break;
            p = sp + 1;
            continue;
        }
        p[klen] = '\0';
        rec->kv[rec->n].key = p;
        char *v = p + klen + 1, *end = v;
        /* The value ends before the next " Key=". */
        for (;;) {
            char *sp = strchr(end, ' ');
            if (!sp) {
                end += strlen(end);
                break;
            }
            if (known_key(keys, sp + 1)) {
                end = sp;
                break;
            }
            end = sp + 1;
        }
        char *next = *end ? end + 1 : end;
        *end = '\0';
        rec->kv[rec->n++].value = v;
        p = next;
        while (*p == ' ')
            p++;
    }
}

const char *bai_record_get(const struct bai_record *rec, const char *key)
{
    for (size_t i = 0; i < rec->n; i++)
        if (strcmp(rec->kv[i].key, key) == 0)
            return rec->kv[i].value;
    return "";
}
