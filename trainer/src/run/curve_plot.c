#include "run/curve_plot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/progress.h"

extern char **environ;

/* gnuplot's name found in a directory of PATH, as an executable file. */
static int on_path(const char *name)
{
    const char *path = getenv("PATH");
    char dir[4096], full[4200];
    struct stat st;
    while (path && *path) {
        const char *colon = strchr(path, ':');
        const size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len > 0 && len < sizeof dir) {
            memcpy(dir, path, len);
            dir[len] = 0;
            snprintf(full, sizeof full, "%s/%s", dir, name);
            if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
                return 1;
        }
        path = colon ? colon + 1 : NULL;
    }
    return 0;
}

/* `s` as a gnuplot single-quoted string ('' stands for '). */
static void gp_quote(char *out, size_t len, const char *s)
{
    size_t n = 0;
    if (len < 3)
        return;
    out[n++] = '\'';
    for (; *s && n + 3 < len; s++) {
        if (*s == '\'')
            out[n++] = '\'';
        out[n++] = *s;
    }
    out[n++] = '\'';
    out[n] = 0;
}

void curve_plot_open(struct curve_plot *p, const char *csv)
{
    memset(p, 0, sizeof *p);
    if (!csv)
        return;
    const size_t n = strlen(csv);
    const int dot_csv = n > 4 && strcmp(csv + n - 4, ".csv") == 0;
    const char *slash = strrchr(csv, '/');
    if (strpbrk(csv, "\n\r") || n + 5 > sizeof p->png) {
        printf("No training-curve PNG: the --csv path has a line break or is too long\n");
        return;
    }
    if (!on_path("gnuplot")) {
        printf("No training-curve PNG: gnuplot is not on PATH (Debian: apt-get install gnuplot-nox)\n");
        return;
    }
    snprintf(p->csv, sizeof p->csv, "%s", csv);
    snprintf(p->png, sizeof p->png, "%.*s.png", (int)(dot_csv ? n - 4 : n), csv);
    /* The temporary file is hidden in the PNG's directory, so that the rename stays in one file system. */
    const size_t dir_len = slash ? (size_t)(slash - csv) + 1 : 0;
    snprintf(p->tmp, sizeof p->tmp, "%.*s.%s.tmp", (int)dir_len, csv, p->png + dir_len);
    p->on = 1;
}

/* The drawing has ended with wait status `status` (-1: reaped by someone else). */
static void collected(struct curve_plot *p, int status)
{
    struct stat st;
    p->pid = 0;
    const int ok = status == -1 ? stat(p->tmp, &st) == 0 && st.st_size > 0 : WIFEXITED(status) && WEXITSTATUS(status) == 0;
    p->lost_to_stop = status != -1 && WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL;
    if (ok && rename(p->tmp, p->png) == 0)
        return;
    unlink(p->tmp);
    if (!p->said_failure) {
        if (!ok && status == -1)
            printf("No training-curve PNG this time: gnuplot ended unseen, leaving no picture\n");
        else if (!ok && WIFSIGNALED(status))
            printf("No training-curve PNG this time: gnuplot was killed (signal %d)\n", WTERMSIG(status));
        else if (!ok)
            printf("No training-curve PNG this time: gnuplot failed (exit status %d; try: gnuplot -e \"plot '%s'\")\n",
                   WEXITSTATUS(status), p->csv);
        else
            printf("No training-curve PNG this time: %s: %s\n", p->png, strerror(errno));
        p->said_failure = 1;
    }
}

/* Collects the drawing when it has ended; kills it (its group) first when `kill_after` seconds have passed.
 * 1 while it runs. */
static int collect(struct curve_plot *p, double kill_after)
{
    int status = 0;
    if (!p->pid)
        return 0;
    pid_t w = waitpid(p->pid, &status, WNOHANG);
    if (w == 0 && progress_now() - p->started < kill_after)
        return 1;
    if (w == 0) {
        const struct timespec tick = {0, 20 * 1000 * 1000};
        kill(-p->pid, SIGKILL);
        if (!p->said_failure)
            printf("No training-curve PNG this time: gnuplot ran for %d s: killed\n", CURVE_PLOT_WAIT);
        p->said_failure = 1;
        /* SIGKILL waits for a process in uninterruptible sleep (a hung file system): give up on it after
         * a second, and on drawing, rather than wait. */
        for (int i = 0; i < 50 && (w = waitpid(p->pid, &status, WNOHANG)) == 0; i++)
            nanosleep(&tick, NULL);
        if (w == 0) {
            printf("No more training-curve PNGs: gnuplot (pid %ld) does not end even when killed\n", (long)p->pid);
            p->pid = 0;
            p->on = 0;
            return 0;
        }
    }
    collected(p, w == p->pid ? status : -1);
    return 0;
}

static void start(struct curve_plot *p, int epochs)
{
    char csv[8300], out[8500], script[32768];
    gp_quote(csv, sizeof csv, p->csv);
    gp_quote(out, sizeof out, p->tmp);
    snprintf(script, sizeof script,
             "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 960,400 noenhanced } "
             "else { set terminal png size 960,400 noenhanced }\n"
             "set output %s\n"
             "set datafile separator ','\n"
             "set key autotitle columnheader top right\n"
             "set xlabel 'epoch'\n"
             "set xtics %d\n"
             "set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05\n"
             "set grid\n"
             "set multiplot layout 1,2\n"
             "set title 'loss'\n"
             "plot %s using ($1+1):3 with linespoints title 'loss', '' using ($1+1):5 with linespoints title 'val_loss'\n"
             "set title 'accuracy'\n"
             "set key bottom right\n"
             "plot %s using ($1+1):2 with linespoints title 'acc', '' using ($1+1):4 with linespoints title 'val_acc'\n"
             "unset multiplot\n",
             out, epochs > 10 ? (epochs + 9) / 10 : 1, csv, csv);
    /* The script on gnuplot's stdin from memory: multi-line blocks need a script rather than -e, and a
     * memfd, unlike a pipe, cannot raise SIGPIPE here when gnuplot ends before reading it. */
    const int in = memfd_create("cifar-train-plot", MFD_CLOEXEC);
    const size_t len = strlen(script);
    if (in < 0 || write(in, script, len) != (ssize_t)len || lseek(in, 0, SEEK_SET) != 0) {
        if (!p->said_failure)
            printf("No training-curve PNG this time: memfd_create: %s\n", strerror(errno));
        p->said_failure = 1;
        if (in >= 0)
            close(in);
        return;
    }
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGTERM);
    sigaddset(&dflt, SIGINT);
    sigaddset(&dflt, SIGUSR1);
    sigaddset(&dflt, SIGPIPE);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dflt);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    char *argv[] = {"gnuplot", NULL};
    const int rc = posix_spawnp(&p->pid, "gnuplot", &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(in);
    if (rc != 0) {
        p->pid = 0;
        if (!p->said_failure)
            printf("No training-curve PNG this time: cannot start gnuplot: %s\n", strerror(rc));
        p->said_failure = 1;
        return;
    }
    p->started = progress_now();
}

void curve_plot_epoch(struct curve_plot *p, int epochs)
{
    p->asked = epochs;
    if (p->on && !collect(p, CURVE_PLOT_WAIT))
        start(p, epochs);
    fflush(stdout);
}

void curve_plot_close(struct curve_plot *p)
{
    const struct timespec tick = {0, 20 * 1000 * 1000};
    while (p->on && collect(p, CURVE_PLOT_WAIT))
        nanosleep(&tick, NULL);
    if (p->on && p->lost_to_stop && p->asked > 0) {
        p->lost_to_stop = 0;
        start(p, p->asked);
        while (p->on && collect(p, CURVE_PLOT_WAIT))
            nanosleep(&tick, NULL);
    }
    fflush(stdout);
}
