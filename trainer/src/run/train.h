/* train: the tutorial's training run (model.fit_generator + ModelCheckpoint + model.save + evaluate) over
 * libcollective, and the per-step core that the tests drive directly.
 *
 * Distributed semantics (Horovod's): every rank runs this; rank 0's initial (or restored) weights and
 * optimizer state are broadcast; each step's gradients are averaged over the ranks before the update (one
 * asynchronous, fused allreduce per layer, queued as soon as backward has produced that layer's
 * gradients); only rank 0 prints and writes files. Validation splits the test set across ranks and sums
 * the results, so every rank sees the same val_loss / val_acc.
 *
 * Randomness: sample order key (seed, epoch, 0, rank, RNG_SHUFFLE), augmentation (seed, epoch, step,
 * rank, RNG_AUGMENT), dropout (seed, epoch, step, rank, RNG_DROPOUT), initial weights (seed) — epoch and
 * step 0-based. Nothing else is random, so a run resumed from checkpoint-E.h5 repeats exactly what an
 * uninterrupted run does from epoch E + 1 on. */
#ifndef TRAINER_TRAIN_H
#define TRAINER_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "run/graph_plan.h"
#include "core/model.h"
#include "core/optimizer.h"

struct train_options {
    const char *dir;      /* --dir: the final model goes to DIR/saved_models/ (default ".") */
    const char *data;     /* --data: a cifar-10-batches-bin directory */
    int download;         /* --download */
    int epochs;           /* --epochs, 0: ceil(100 / world size) */
    int batch;            /* --batch-size, per rank */
    double lr;            /* --lr, 0: 1e-4 * world size */
    int augment;          /* 0 with --no-augmentation */
    uint64_t seed;        /* --seed */
    int threads;          /* --threads, 0: the CPUs this process may run on */
    const char *resume;   /* --resume FILE, or "auto": the newest checkpoint in checkpoint_dir, if any */
    size_t limit_train;   /* --limit-train, 0: all */
    size_t limit_test;    /* --limit-test, 0: all */
    int shard;            /* --shard */
    const char *log_json; /* --log-json FILE */
    int log_every;        /* --log-every N steps (JSON step lines) */
    const char *checkpoint_dir; /* --checkpoint-dir, default "." (the tutorial's ./checkpoint-{epoch}.h5) */
    int keep_checkpoints;       /* --keep-checkpoints N: the newest N epoch checkpoints stay, 0: all */
    int keep_best;              /* --keep-best: and the one with the best val_acc (checkpoint_files.h) */
    const char *csv;            /* --csv FILE: Keras's CSVLogger file (io/csv_log.h), with a PNG beside it */
    const char *tensorboard;    /* --tensorboard DIR: TensorBoard event files (io/tb_events.h) */
    const struct kernels *kernels; /* --device: the compute table (default &kernels_cpu); a device table
                                      must be ready (kernels_cuda_open) and coll_init'ed with use_device */
    int graphs;                    /* 0 with --no-cuda-graph (default 1: where step_core can use them) */
    int dump_steps;                /* --dump-steps N: export the first N steps (step_export.h), then stop */
    const char *dump_dir;          /* --dump-dir DIR: where (required with --dump-steps) */
    const char *generator;         /* recorded in checkpoints: "cifar-train (slurm-batchai) VERSION" */
};

/* train_run's exit statuses beyond 0 (done) and 1 (an error, said on stderr). */
#define TRAIN_EXIT_STOPPED 3   /* SIGTERM, SIGINT or SIGUSR1: stopped after a step, checkpoint written */
#define TRAIN_EXIT_NONFINITE 4 /* a NaN or infinite loss or weight: stopped, nothing saved from that step */
#define DEVICE_LOSS_EVERY 16   /* with a device table, steps between reads of the loss (see train_run) */

void train_options_default(struct train_options *o);

/* The whole run; coll_init() must have been called. Returns 0, TRAIN_EXIT_STOPPED, TRAIN_EXIT_NONFINITE, or
 * 1 after printing the error.
 *
 * Before the first step, rank 0 creates --dir/saved_models and --checkpoint-dir, proves each writable and
 * removes stale temporaries there (atomic_file_cleanup_dir), and every rank checks the data (cifar_verify).
 *
 * Stopping: SIGTERM, SIGINT and SIGUSR1 only set a flag. At every step the ranks agree whether any rank saw
 * one, or a non-finite loss: with size > 1 through votes reduced with the step's gradients (step_core.vote,
 * no collective of its own; cast once backward is done, so a signal during the gradients' wait or the
 * update is seen at the next step); on a signal all stop after that same step, rank 0 writes
 * checkpoint-{E}-step-{S}.h5 (E: the epoch as printed, "Epoch E/N"; S: its steps done) and the run returns
 * TRAIN_EXIT_STOPPED. Resuming from it (by name or --resume auto) runs
 * the rest of that epoch and gives the same model as an uninterrupted run at the same thread count, world
 * size and batch size. The loss is read after every step on the CPU and every DEVICE_LOSS_EVERY steps
 * with a device table (each read waits for the device); weights are checked before each save. */
int train_run(const struct train_options *o);

/* Installs the SIGTERM / SIGINT / SIGUSR1 handlers that train_run's stop reads; main() calls it first, so that
 * a signal that comes while MPI starts or the data loads stops the run at its first step instead of killing
 * it. It also blocks them in the calling thread and every thread started later (no handler may interrupt a
 * compute thread: train.c says why); train_run reads them, pending, at each step boundary. */
void train_catch_signals(void);

/* `cifar-train evaluate`: prints "Test loss: ..." and "Test accuracy: ..." on rank 0. */
int evaluate_run(const char *model_path, const struct train_options *o);

/* One training step of this rank: forward and backward over the B images in the model's input
 * (model_load, or input/batch_source.h) with dropout masks from dropout_key, gradients averaged over all
 * ranks (when size > 1), RMSprop update. Adds the summed loss and correct count of this rank's batch to
 * the model's sums (model_read_sums), and returns without waiting for a device.
 * With a table that has a graph engine and a single rank (a step that waits for no allreduce), steps of
 * the largest size so far are captured once as a CUDA graph after STEP_GRAPH_WARMUP plain ones and then
 * replayed (graph_plan.h): the host work of a step is then one upload of the step's values
 * (model_set_step) and one graph launch. Returns 0, or -1 when the allreduce failed. */
#define STEP_GRAPH_WARMUP 2
#define STEP_VOTES 4 /* train.c's: one per stop signal (SIGTERM, SIGINT, SIGUSR1) and a non-finite loss */
struct step_core {
    struct model model;
    struct rmsprop opt;
    int size; /* ranks taking part in gradient averaging */
    struct graph_plan plan;
    struct kernel_graph *graph; /* NULL until captured */
    double wait_sec; /* summed time the step waited for its gradient allreduces after backward (bench-scaling) */
    /* The caller's vote on each step (train.c: its stop reasons), which costs no collective of its own:
     * vote(vote_ctx, votes) writes this rank's STEP_VOTES values, and when step_core_step returns, `votes`
     * holds their average over the ranks (nonzero where any rank's value is). With several ranks it is
     * called once backward has queued the last gradient tensor, and the votes are reduced in the
     * gradients' batch; with one, after the step. vote NULL: zeros. */
    void (*vote)(void *ctx, float *votes);
    void *vote_ctx;
    float votes[STEP_VOTES];
    /* Several ranks: from coll_host_alloc, the votes' slot and, with a host table, before it the gradients,
     * parameters and accumulators (step_core_create says why). */
    float *shared;
    float *vote_slot; /* several ranks: where the votes are reduced, in `shared` */
    /* Several ranks with a host table: the gradients' reductions update the parameters (apply_update),
     * which live in `shared`, rank 0's for every rank of one host. */
    int applies;
};
/* size > 1 makes it collective: the votes' slot, and with a host table the gradients, parameters and
 * accumulators, come from coll_host_alloc, so that ranks on one node average the gradients straight out
 * of each other's memory and each updates its slice of the one copy of the parameters. */
int step_core_create(struct step_core *c, const struct kernels *k, int max_batch, double lr, int size);
/* Graphs on (the default where possible) or off (--no-cuda-graph); drops a captured graph. */
void step_core_set_graphs(struct step_core *c, int on);
void step_core_destroy(struct step_core *c);
int step_core_step(struct step_core *c, int B, uint64_t dropout_key);

#endif
