/* Atomic replacement under SIGKILL: a child rewrites checkpoint-1.h5 in a loop (every write holds one
 * value everywhere, a different one each time) and is killed at random moments, scaled to the measured
 * duration of one write. After every kill the target is absent (only before the first write completed) or
 * a complete file: it loads, and all its weights hold one value. The killed writer's temporary file is
 * removed by the next writer's cleanup; temporaries of live processes and other hosts are kept. Every
 * surviving file is also opened with h5py. */
#include "io/atomic_file.h"
#include "io/keras_h5.h"
#include "core/model.h"
#include "test_io_util.h"

#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define ROUNDS 12

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const struct keras_train_state state0 = {.iterations = 1, .epoch = 1, .lr = 1e-4, .rho = 0.9, .decay = 1e-6,
                                                .epsilon = 1e-7, .seed = 1, .world_size = 1, .threads = 1, .batch = 1};

static void fill(float *v, float value)
{
    for (size_t i = 0; i < MODEL_NPARAMS; i++)
        v[i] = value;
}

/* Temporaries of `base` in dir: ".<base>.tmp.*" */
static int count_temps(const char *dir, const char *base)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, ".%s.tmp.", base);
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

static void writer(const char *target, float *buf)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char err[512];
    for (int k = 1;; k++) {
        fill(buf, (float)k);
        if (keras_save(target, buf, buf, &state0, err, sizeof err) != 0) {
            fprintf(stderr, "writer: %s\n", err);
            _exit(3);
        }
    }
}

static void test_kill_loop(const char *dir)
{
    char target[1024], err[1024], keep[1024];
    snprintf(target, sizeof target, "%s/checkpoint-1.h5", dir);
    float *buf = malloc(MODEL_NPARAMS * sizeof(float));
    float *got = malloc(MODEL_NPARAMS * sizeof(float));
    char probe[1024];
    snprintf(probe, sizeof probe, "%s/timing.h5", dir);
    fill(buf, 0);
    double t0 = now();
    CHECK(keras_save(probe, buf, buf, &state0, err, sizeof err) == 0, "%s", err);
    double one_write = now() - t0;
    unlink(probe);
    check_note("one checkpoint write: %.1f ms", one_write * 1e3);

    char cmd[8192];
    int off = snprintf(cmd, sizeof cmd, "/usr/bin/python3 " TEST_SRC_DIR "/test_io_h5check.py check-uniform");
    int survivors = 0, leaked_total = 0;
    bool committed = false; /* once a write has landed, the target must never vanish again */
    uint64_t x = 2024;
    for (int round = 0; round < ROUNDS; round++) {
        pid_t pid = fork();
        if (pid == 0)
            writer(target, buf);
        CHECK(pid > 0, "fork failed");
        if (pid < 0)
            break;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double delay = (double)(x >> 11) / 9007199254740992.0 * 4 * one_write;
        struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status), "writer exited by itself (status %d)", status);

        if (access(target, F_OK) == 0) {
            committed = true;
            struct keras_train_state s;
            int rc = keras_load(target, got, NULL, &s, err, sizeof err);
            CHECK(rc == 0, "round %d: target unreadable after SIGKILL: %s", round, err);
            size_t mixed = 0;
            for (size_t i = 1; rc == 0 && i < MODEL_NPARAMS; i++)
                mixed += got[i] != got[0];
            CHECK(mixed == 0, "round %d: %zu weights differ from the first", round, mixed);
            snprintf(keep, sizeof keep, "%s/survivor-%d.h5", dir, round);
            copy_prefix(target, keep, (size_t)-1);
            off += snprintf(cmd + off, sizeof cmd - (size_t)off, " '%s'", keep);
            survivors++;
        } else {
            /* Under load a writer can be killed before its first write lands: no file yet is fine. */
            CHECK(!committed, "round %d: target vanished after a kill", round);
        }
        /* The killed writer may have left its temporary file; the next writer's begin removes it. */
        int leaked = count_temps(dir, "checkpoint-1.h5");
        leaked_total += leaked;
        int removed = atomic_file_cleanup_stale(target);
        CHECK(removed == leaked && count_temps(dir, "checkpoint-1.h5") == 0, "round %d: %d temps, %d removed",
              round, leaked, removed);
    }
    check_note("%d rounds: %d with a complete target, %d killed mid-write (temporary file left, then cleaned)",
           ROUNDS, survivors, leaked_total);
    if (survivors > 0)
        CHECK(system(cmd) == 0, "h5py rejected a surviving file");
    free(buf);
    free(got);
}

static void test_cleanup_rules(const char *dir)
{
    char target[1024], path[1200], host[128];
    snprintf(target, sizeof target, "%s/model.h5", dir);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++)
        if (*p == '.' || *p == '/')
            *p = '_';
    /* Our own (live) pid, another host, and a pid that cannot exist (above pid_max). */
    const char *names[3][2] = {{host, "self"}, {"otherhost", "1"}, {host, "4194304"}};
    for (int i = 0; i < 3; i++) {
        char pid[32];
        snprintf(pid, sizeof pid, "%ld", strcmp(names[i][1], "self") == 0 ? (long)getpid() : atol(names[i][1]));
        snprintf(path, sizeof path, "%s/.model.h5.tmp.%s.%s.AbCdEf", dir, names[i][0], pid);
        FILE *f = fopen(path, "w");
        fclose(f);
    }
    CHECK(atomic_file_cleanup_stale(target) == 1, "expected exactly the dead-pid temporary removed");
    CHECK(count_temps(dir, "model.h5") == 2, "live and foreign temporaries must stay");
    /* The directory-wide cleanup: the same rules for every target (here checkpoint-12.h5 and a name that
     * holds ".tmp." itself); a file that only looks similar stays. */
    const struct {
        const char *before, *pid;
    } more[] = {{".checkpoint-12.h5", "4194304"}, {".a.tmp.b.h5", "4194304"}, {".checkpoint-13.h5", "self"},
                {"checkpoint-14.h5", "4194304"}};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s.tmp.%s.%ld.Xy", dir, more[i].before, host,
                 strcmp(more[i].pid, "self") == 0 ? (long)getpid() : atol(more[i].pid));
        FILE *f = fopen(path, "w");
        fclose(f);
    }
    CHECK(atomic_file_cleanup_dir(dir) == 2, "cleanup_dir: expected the two dead-pid temporaries removed");
    CHECK(count_temps(dir, "checkpoint-13.h5") == 1 && count_temps(dir, "model.h5") == 2,
          "cleanup_dir removed a live or foreign temporary");
    snprintf(path, sizeof path, "%s/.checkpoint-13.h5.tmp.%s.%ld.Xy", dir, host, (long)getpid());
    unlink(path);
    snprintf(path, sizeof path, "%s/checkpoint-14.h5.tmp.%s.4194304.Xy", dir, host);
    CHECK(access(path, F_OK) == 0, "cleanup_dir removed a file that is no hidden temporary");
    unlink(path);

    /* begin + abort leaves nothing new; begin + commit gives the file, mode 0644 less umask. */
    struct atomic_file af;
    char err[512];
    CHECK(atomic_file_begin(&af, target, err, sizeof err) == 0, "%s", err);
    CHECK(count_temps(dir, "model.h5") == 3, "begin creates one temporary");
    atomic_file_abort(&af);
    CHECK(count_temps(dir, "model.h5") == 2 && access(target, F_OK) != 0, "abort leaves nothing");
    CHECK(atomic_file_begin(&af, target, err, sizeof err) == 0, "%s", err);
    CHECK(write(af.fd, "hello\n", 6) == 6, "write");
    CHECK(atomic_file_commit(&af, err, sizeof err) == 0, "%s", err);
    struct stat st;
    mode_t um = umask(0);
    umask(um);
    CHECK(stat(target, &st) == 0 && st.st_size == 6 && (st.st_mode & 0777) == (0644 & ~um), "committed file mode %o",
          st.st_mode & 0777);
    CHECK(atomic_file_begin(&af, "/nonexistent-dir/x.h5", err, sizeof err) == -1 && strstr(err, "/nonexistent-dir"),
          "%s", err);
}

int main(void)
{
    /* Every surviving file is opened with h5py, the independent reader: no h5py, no test. */
    if (system("/usr/bin/python3 -c 'import h5py' 2>/dev/null") != 0) {
        return check_skip("dep", "Debian's python3-h5py is needed (contrib/install-deps.sh)");
    }
    char *dir = make_temp_dir("atomic");
    test_kill_loop(dir);
    test_cleanup_rules(dir);
    rm_rf(dir);
    return check_exit("test_io_atomic");
}
