/* stop_signals: the stop signals and the ranks' votes on them (stop_signals.h). */
#include "run/stop_signals.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "collective.h"
#include "run/step_core.h"

static volatile sig_atomic_t stop_signal; /* set by the handler or take_stop_signals, read at step boundaries */
static sigset_t stop_signals;               /* SIGTERM, SIGINT, SIGUSR1 */

static void on_stop_signal(int sig) { stop_signal = sig; }

/* The stop signals are blocked in the calling thread (main, before it starts any) and so in every thread
 * started after it: OpenMP's, CUDA's, MPI's, libcollective's. A handler must never interrupt a compute
 * thread: oneDNN's JIT sgemm runs with its stack pointer moved into a heap buffer, and the kernel pushes
 * the signal frame below it, over malloc's chunk headers ("corrupted size vs. prev_size" in dnnl_sgemm's
 * free; a no-op SIGUSR2 handler and a stream of SIGUSR2 at the compute thread crash 3 runs of 3). Blocked
 * signals stay pending until take_stop_signals() reads them at a step boundary. The handler remains for
 * threads a library started before main (OpenBLAS's pool), which never run oneDNN. */
void train_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGUSR1);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
}

/* Consumes the stop signals pending on this thread or the process, without waiting. */
static void take_stop_signals(void)
{
    const struct timespec now = {0, 0};
    int sig;
    while ((sig = sigtimedwait(&stop_signals, NULL, &now)) > 0)
        stop_signal = sig;
}

/* The stop signals as the ranks vote on them (stop_vote_cast, stop_agree_signal): one vote each, so that
 * rank 0 names a signal that only another rank has taken yet (srun passes a signal on to the ranks one by
 * one). When ranks took different ones, the first here is named. */
#define STOP_NSIGNALS 3
_Static_assert(STOP_NSIGNALS + 1 == STEP_VOTES, "a vote per stop signal and one for a non-finite loss");
static const int stop_signo[STOP_NSIGNALS] = {SIGTERM, SIGINT, SIGUSR1};
static const char *const stop_signame[STOP_NSIGNALS] = {"SIGTERM", "SIGINT", "SIGUSR1"};

const char *stop_voted_signal(const float *votes)
{
    for (int k = 0; k < STOP_NSIGNALS; k++)
        if (votes[k] != 0)
            return stop_signame[k];
    return NULL;
}

void stop_vote_cast(void *ctx, float *votes)
{
    struct stop_vote *v = ctx;
    take_stop_signals();
    if (v->check)
        model_read_sums(v->m, &v->loss_sum, &v->correct);
    v->nonfinite = v->check && !isfinite(v->loss_sum);
    for (int k = 0; k < STOP_NSIGNALS; k++)
        votes[k] = stop_signal == stop_signo[k];
    votes[STOP_NSIGNALS] = v->nonfinite;
}

int stop_reasons(const float *votes)
{
    return (stop_voted_signal(votes) ? STOP_SIGNAL : 0) | (votes[STOP_NSIGNALS] != 0 ? STOP_NONFINITE : 0);
}

int stop_agree_signal(const char **name)
{
    take_stop_signals();
    int32_t v[STOP_NSIGNALS];
    float votes[STOP_NSIGNALS];
    for (int k = 0; k < STOP_NSIGNALS; k++)
        v[k] = stop_signal == stop_signo[k];
    if (coll_size() > 1 && coll_allreduce(v, v, STOP_NSIGNALS, COLL_INT32, COLL_SUM) != COLL_OK) {
        fprintf(stderr, "cifar-train: allreduce failed: %s\n", coll_last_error());
        return -1;
    }
    for (int k = 0; k < STOP_NSIGNALS; k++)
        votes[k] = (float)v[k];
    *name = stop_voted_signal(votes);
    return *name != NULL;
}
