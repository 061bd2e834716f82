/* stop_signals: why a run stops early, and how the ranks agree on it. SIGTERM, SIGINT and SIGUSR1 only set a
 * flag, read at step boundaries; a non-finite loss is the fourth reason. At every step each rank votes
 * (stop_vote_cast, the step core's vote function: step_core.h) and the votes are averaged with the
 * gradients, so that all ranks stop after the same step at no collective of their own. */
#ifndef TRAINER_STOP_SIGNALS_H
#define TRAINER_STOP_SIGNALS_H

#include "core/model.h"

/* Installs the SIGTERM / SIGINT / SIGUSR1 handlers that the run's stop reads; main() calls it first, so that
 * a signal that comes while MPI starts or the data loads stops the run at its first step instead of killing
 * it. It also blocks them in the calling thread and every thread started later (no handler may interrupt a
 * compute thread: stop_signals.c says why); the run reads them, pending, at each step boundary. */
void train_catch_signals(void);

/* This rank's stop reasons at the end of a training step: the signals taken by then, and whether the loss
 * is non-finite where the step reads it (every step on the CPU, every DEVICE_LOSS_EVERY steps and the
 * last one of an epoch with a device). The step core asks for it (step_core.vote) and averages the
 * ranks' votes with the gradients, so that the ranks agree on a stop at no collective of its own. With
 * several ranks the vote is cast once backward has queued the last gradients, before the step waits for
 * them: a signal that comes later (during that wait or the update) is seen one step later than a vote
 * after the step would see it; every rank still stops after the same step. */
struct stop_vote {
    struct model *m;
    int check;       /* read the loss at this step */
    double loss_sum; /* the epoch's summed loss as last read */
    int correct;
    int nonfinite;   /* this rank's loss is not finite at this step */
};

/* The step core's vote function (ctx: a struct stop_vote): writes this rank's STEP_VOTES votes. */
void stop_vote_cast(void *ctx, float *votes);

enum { STOP_SIGNAL = 1, STOP_NONFINITE = 2 };

/* The stop reasons (bits) of any rank, from the step core's averaged votes. */
int stop_reasons(const float *votes);

/* The name of the first signal with a nonzero vote ("SIGTERM", ...), NULL when none has one. */
const char *stop_voted_signal(const float *votes);

/* Every rank calls this at the same point, outside a step (the end of an epoch): 1 when any rank has a
 * stop signal (*name: which, as stop_voted_signal names it), 0 when none has, -1 when the allreduce failed
 * (said). */
int stop_agree_signal(const char **name);

#endif
