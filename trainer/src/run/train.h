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

#include "core/kernels.h"

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

#endif
