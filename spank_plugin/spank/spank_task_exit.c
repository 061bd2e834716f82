/* slurm_spank_task_exit in slurmstepd (root), once per task of a step: a task that ended non-zero gets one
 * line "<time with ns> attempt N: task R exited with code C" (or "killed by signal S") in
 * $AZ_BATCHAI_STDOUTERR_DIR/execution-<node>.log. The batch script then takes the earliest such line of the
 * attempt as the job's exit code (render.c), and batchai-job shows it.
 *
 * The directory comes from the step's environment, which the user controls, so root never opens it: a child
 * that has fully become the job's user appends the line (O_APPEND, O_NOFOLLOW, O_NONBLOCK, regular files
 * only), with a deadline, and the kernel checks every permission. Nothing here fails a task or the step: a
 * line that cannot be written is logged to slurmd's log and the job keeps srun's code. */
#include "spank_task_exit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "node/as_user.h"
#include "spank_common.h"

#define NOTE_DEADLINE_MS 5000

struct note {
    char path[4096];
    char line[512];
};

static int append_note(void *arg)
{
    const struct note *n = arg;
    struct stat st;
    int fd = open(n->path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0)
        return 1;
    size_t len = strlen(n->line);
    int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && write(fd, n->line, len) == (ssize_t)len ? 0 : 1;
    close(fd);
    return rc;
}

int bai_remote_task_exit(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    uint32_t jobid, stepid, rank;
    uid_t uid;
    gid_t gid;
    int status;
    char dir[4000], node[128] = "", attempt[16] = "1";
    if (!bai_option_value(sp) || spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS ||
        (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        return 0;
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
        return 0;
    /* The batch script's own end is Slurm's; only the steps' tasks are noted. */
    if (stepid == SLURM_BATCH_SCRIPT ||
        spank_getenv(sp, "AZ_BATCHAI_STDOUTERR_DIR", dir, sizeof dir) != ESPANK_SUCCESS || dir[0] != '/')
        return 0;
    if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node) != ESPANK_SUCCESS || !node[0]) {
        const char *env = getenv("SLURMD_NODENAME");
        uint32_t nodeid = 0;
        if (env && env[0] && strlen(env) < sizeof node)
            snprintf(node, sizeof node, "%s", env);
        else if (spank_get_item(sp, S_JOB_NODEID, &nodeid) == ESPANK_SUCCESS)
            snprintf(node, sizeof node, "node%u", nodeid);
    }
    (void)spank_getenv(sp, "BATCHAI_ATTEMPT", attempt, sizeof attempt);
    if (strchr(node, '/') || !node[0])
        return 0;

    struct note n;
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", gmtime_r(&ts.tv_sec, &tm));
    if (snprintf(n.path, sizeof n.path, "%s/execution-%s.log", dir, node) >= (int)sizeof n.path)
        return 0;
    if (WIFEXITED(status))
        snprintf(n.line, sizeof n.line, "%s.%09ldZ attempt %s: task %u of step %u exited with code %d\n", when,
                 ts.tv_nsec, attempt, rank, stepid, WEXITSTATUS(status));
    else
        snprintf(n.line, sizeof n.line, "%s.%09ldZ attempt %s: task %u of step %u killed by signal %d, code %d\n",
                 when, ts.tv_nsec, attempt, rank, stepid, WTERMSIG(status), 128 + WTERMSIG(status));
    int rc = bai_run_as_user(uid, gid, -1, bai_now_ms() + NOTE_DEADLINE_MS, append_note, &n);
    if (rc != 0)
        bai_error("batchai: job %u: cannot note task %u's exit in %s (%s)", jobid, rank, n.path,
                  rc == -2 ? "deadline" : "as the user");
    return 0;
}
