/* cifar-train: the command line (train, evaluate, --version, --help). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/gpu_grant.h"
#include "io/cifar_data.h"
#include "collective.h"
#include "cuda/cuda_plugin.h"
#include "run/evaluate.h"
#include "run/stop_signals.h"
#include "run/train.h"

/* Under Batch AI (the plugin's AZ_BATCHAI_* variables are set), what the options default to. */
#define BATCHAI_CSV_NAME "training.csv" /* in AZ_BATCHAI_STDOUTERR_DIR, beside stdout.txt */
#define BATCHAI_KEEP 3                  /* newest checkpoints kept, and the best by val_acc */
#define TEXT_OF(x) #x
#define TEXT_OF_VALUE(x) TEXT_OF(x)
#define BATCHAI_KEEP_TEXT TEXT_OF_VALUE(BATCHAI_KEEP) " and --keep-best"

#ifndef TRAINER_VERSION
#define TRAINER_VERSION "unknown"
#endif

static const char usage[] =
    "usage: cifar-train [options]                      train the tutorial's CIFAR-10 model\n"
    "       cifar-train evaluate MODEL.h5 --data DIR    test loss and accuracy of a model or checkpoint\n"
    "\n"
    "Run one process per socket or GPU under srun or mpirun; a single process needs no launcher.\n"
    "  --dir DIR           save DIR/saved_models/keras_cifar10_trained_model.h5 (default .)\n"
    "  --data DIR          a cifar-10-batches-bin directory (data_batch_1..5.bin, test_batch.bin)\n"
    "  --download          fetch and check the official archive into DIR/cifar-10-batches-bin (DIR from\n"
    "                      --data, default ~/.keras/datasets) unless it is already there\n"
    "  --epochs N          default ceil(100 / world size)\n"
    "  --batch-size N      per process (default 32)\n"
    "  --lr X              RMSprop learning rate (default 1e-4 * world size)\n"
    "  --no-augmentation   no random shifts and flips\n"
    "  --seed N            initial weights, sample order, augmentation, dropout (default 1)\n"
    "  --threads N         compute threads per process (default: the CPUs it may run on)\n"
    "  --device cpu|cuda   where to compute (default: cuda when this process sees a GPU, else cpu); with\n"
    "                      cuda each rank takes one GPU and says which on stderr, gradients go over NCCL.\n"
    "                      A process given GPUs (CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, SLURM_GPUS_ON_NODE,\n"
    "                      AZ_BATCHAI_NUM_GPUS) computes on one or stops (exit 5); only --device cpu\n"
    "                      puts it on the CPU\n"
    "  --tf32              with cuda: GEMMs in TF32 on tensor cores (faster, ~1e-3 relative per product;\n"
    "                      the default is full FP32)\n"
    "  --no-cuda-graph     with cuda: launch each step's kernels one by one instead of replaying the step\n"
    "                      recorded once as a CUDA graph\n"
    "  --resume FILE|auto  continue from a checkpoint-{epoch}.h5 (or checkpoint-{epoch}-step-{n}.h5); auto:\n"
    "                      from the newest in --checkpoint-dir, or from the start when there is none\n"
    "  --limit-train N     use the first N training images\n"
    "  --limit-test N      use the first N test images\n"
    "  --shard             split the training set across processes (default: each walks all of it)\n"
    "  --compress none|fp16\n"
    "                      gradients that cross hosts travel as float16, summed in float32 (Horovod's\n"
    "                      Compression.fp16; libcollective's COLL_COMPRESS). Default none\n"
    "  --checkpoint-dir D  where checkpoint-{epoch}.h5 go (default ., as the tutorial)\n"
    "  --keep-checkpoints N\n"
    "                      keep only the newest N checkpoint-{epoch}.h5 (0: all, the default; under\n"
    "                      Batch AI the default is " BATCHAI_KEEP_TEXT ")\n"
    "  --keep-best         with --keep-checkpoints: also keep the checkpoint with the best val_acc\n"
    "  --csv FILE          one row per epoch as Keras's CSVLogger writes them, continued by --resume, and\n"
    "                      FILE's curves as a PNG beside it when gnuplot is installed (under Batch AI the\n"
    "                      default is $AZ_BATCHAI_STDOUTERR_DIR/" BATCHAI_CSV_NAME ")\n"
    "  --tensorboard DIR   TensorBoard event files, one per run (default: $AZ_BATCHAI_OUTPUT_TENSORBOARD\n"
    "                      when the job declares an output directory with the id TENSORBOARD)\n"
    "  --log-json FILE     append one JSON line per epoch and per --log-every steps\n"
    "  --log-every N       steps between JSON step lines (default 50, 0: none)\n"
    "  --dump-steps N      debug: export the first N training steps (inputs, dropout masks, sample order,\n"
    "                      weights; trainer/src/io/step_export.h) to --dump-dir DIR, a new directory, then stop\n"
    "  --version, --help\n"
    "\n"
    "SIGTERM, SIGINT and SIGUSR1 end the run after the current step with a checkpoint, exit status 3.\n"
    "Exit status: 0 done, 1 error, 3 stopped by a signal (resumable), 4 non-finite loss or weights,\n"
    "5 a GPU was given or asked for (--device cuda) and cannot be used.\n";

/* A decimal integer in [min, max]: no sign tricks, no trailing text, no silent truncation (strtoll's
 * ERANGE and the range check together catch 4294967297 for an int). */
static int parse_count(const char *opt, const char *s, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max || (s[0] == '-' && min >= 0)) {
        fprintf(stderr, "cifar-train: %s: '%s' is not an integer from %lld to %lld\n", opt, s, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

/* How many GPUs this process sees (0 with the reason in why), and the table that computes on them. */
static int cuda_devices(char *why, size_t len)
{
    const struct cuda_plugin *cuda = cuda_plugin_load(why, len);
    return cuda ? cuda->device_count(why, len) : 0;
}

static const struct kernels *cuda_table(void)
{
    const struct cuda_plugin *cuda = cuda_plugin_load(NULL, 0);
    return cuda ? cuda->table : NULL;
}

static void print_version(void)
{
    char why[256];
    int n = cuda_devices(why, sizeof why);
    printf("cifar-train (slurm-batchai) %s\n", TRAINER_VERSION);
    if (n > 0)
        printf("cuda: %d device%s\n", n, n == 1 ? "" : "s");
    else
        printf("cuda: no device (%s)\n", why);
}

/* Exit status when a GPU was required (given by the launcher, or --device cuda) and cannot be used. */
enum { EXIT_NO_GPU = 5 };

/* What the launcher gave this process (gpu_grant.h), and the device request it makes. */
struct device_request {
    const char *want;   /* --device: "cpu", "cuda", or NULL for the default */
    int granted;        /* the launcher gave this process a GPU */
    char said[256];     /* the variables that say so, with their values */
};

/* Says why the GPU that was required cannot be used, naming the variables that gave it. */
static void gpu_refused(const struct device_request *r, const char *why)
{
    if (r->granted)
        fprintf(stderr, "cifar-train: this process was given a GPU (%s) but cannot use it: %s%s\n", r->said, why,
                r->want ? "" : "; stopping instead of training on the CPU (--device cpu computes there on purpose)");
    else
        fprintf(stderr, "cifar-train: %s: %s\n", r->want ? "--device cuda" : "the GPU this process sees", why);
}

/* The table for the request, or NULL after printing why it cannot be met (*status: the exit status). With
 * no --device: cuda when the launcher gave a GPU (and it must work), else cuda when one is visible, else
 * the CPU. */
static const struct kernels *choose_device(const struct device_request *r, int *status)
{
    char why[512];
    *status = 1;
    if (r->want && strcmp(r->want, "cpu") == 0)
        return &kernels_cpu;
    if (r->want && strcmp(r->want, "cuda") != 0) {
        fprintf(stderr, "cifar-train: --device: '%s' is neither cpu nor cuda\n", r->want);
        return NULL;
    }
    if (cuda_devices(why, sizeof why) > 0)
        return cuda_table();
    if (!r->want && !r->granted)
        return &kernels_cpu;
    char no[600];
    snprintf(no, sizeof no, "no CUDA device (%s)", why);
    gpu_refused(r, no);
    *status = EXIT_NO_GPU;
    return NULL;
}

/* coll_init for the chosen table. Where the GPU was only the default, not given by the launcher, and
 * libcollective cannot use it (no NCCL plugin, say), every rank fails alike and all fall back to the CPU,
 * saying so. */
static int init_collectives(struct train_options *o, const struct device_request *r, int fp16, int *status)
{
    const int gpu = o->kernels->device;
    const struct coll_init_opts host = {.compress_fp16 = fp16};
    *status = 1;
    if (coll_init(&(struct coll_init_opts){.use_device = gpu, .compress_fp16 = fp16}) == COLL_OK)
        return 0;
    if (gpu && (r->want || r->granted)) {
        gpu_refused(r, coll_last_error());
        *status = EXIT_NO_GPU;
        /* Every rank failed alike (coll_init agrees on device failures): end MPI cleanly, so that the
         * launcher passes on this status instead of reporting ranks that left without finalising. */
        if (coll_init(&host) == COLL_OK)
            coll_finalize();
        return -1;
    }
    if (gpu) {
        fprintf(stderr, "cifar-train: warning: computing on the CPU: %s\n", coll_last_error());
        o->kernels = &kernels_cpu;
        if (coll_init(&host) == COLL_OK)
            return 0;
    }
    fprintf(stderr, "cifar-train: cannot initialise the collectives: %s\n", coll_last_error());
    return -1;
}

/* Binds a device table to the GPU libcollective picked for this rank (libcollective/README.md), in TF32
 * or FP32, and says which GPU that is on stderr: its ordinal, model, UUID and PCI bus id. */
static int device_open(const struct kernels *k, const struct device_request *r, int tf32, int *status)
{
    const struct cuda_plugin *cuda;
    char err[256], name[512];
    *status = 1;
    if (!k->device) {
        if (!tf32)
            return 0;
        fprintf(stderr, "cifar-train: --tf32: only --device cuda computes in TF32\n");
        return -1;
    }
    cuda = cuda_plugin_load(err, sizeof err);
    if (cuda && cuda->open(coll_device(), err, sizeof err) == 0) {
        const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
        cuda->describe(coll_device(), name, sizeof name); /* on failure, name holds CUDA's reason */
        fprintf(stderr, "cifar-train: rank %d of %d: GPU %d%s%s (%s)\n", coll_rank(), coll_size(), coll_device(),
                cvd ? " of CUDA_VISIBLE_DEVICES=" : "", cvd ? cvd : "", name);
        cuda->set_tf32(tf32);
        return 0;
    }
    gpu_refused(r, err);
    *status = EXIT_NO_GPU;
    return -1;
}

/* A CPU run has nothing to close, and must not load the CUDA library (and CUDA's own, cuBLAS among them)
 * only to find that out at its exit. */
static void device_close(const struct kernels *k)
{
    if (!k->device)
        return;
    const struct cuda_plugin *cuda = cuda_plugin_load(NULL, 0);
    if (cuda && k == cuda->table)
        cuda->close();
}

/* Under Batch AI: the CSV beside the job's stdout.txt, TensorBoard in the TENSORBOARD output directory, and
 * a bounded number of checkpoints, where the command line says nothing else. csv_path: storage for the
 * CSV's path. */
static void batchai_defaults(struct train_options *o, char *csv_path, size_t len)
{
    const char *logs = getenv("AZ_BATCHAI_STDOUTERR_DIR"), *tb = getenv("AZ_BATCHAI_OUTPUT_TENSORBOARD");
    if (!o->csv && logs && *logs && snprintf(csv_path, len, "%s/%s", logs, BATCHAI_CSV_NAME) < (int)len)
        o->csv = csv_path;
    if (!o->tensorboard && tb && *tb)
        o->tensorboard = tb;
    if (o->keep_checkpoints < 0 && getenv("AZ_BATCHAI_JOB_NAME")) {
        o->keep_checkpoints = BATCHAI_KEEP;
        o->keep_best = 1;
    }
    if (o->keep_checkpoints < 0)
        o->keep_checkpoints = 0;
}

/* Returns 0, 1 on a usage error, 2 when --help/--version already answered. */
static int parse(int argc, char **argv, struct train_options *o, const char **device, int *tf32, int *fp16)
{
    enum { O_DIR = 256, O_DATA, O_DOWNLOAD, O_EPOCHS, O_BATCH, O_LR, O_NOAUG, O_SEED, O_THREADS, O_RESUME,
           O_LTRAIN, O_LTEST, O_SHARD, O_JSON, O_EVERY, O_CKDIR, O_DEVICE, O_TF32, O_NOGRAPH, O_DSTEPS, O_DDIR, O_VERSION,
           O_HELP, O_KEEP, O_KEEPBEST, O_CSV, O_TB, O_COMPRESS };
    static const struct option opts[] = {
        {"dir", required_argument, 0, O_DIR},          {"data", required_argument, 0, O_DATA},
        {"download", no_argument, 0, O_DOWNLOAD},      {"epochs", required_argument, 0, O_EPOCHS},
        {"batch-size", required_argument, 0, O_BATCH}, {"lr", required_argument, 0, O_LR},
        {"no-augmentation", no_argument, 0, O_NOAUG},  {"seed", required_argument, 0, O_SEED},
        {"threads", required_argument, 0, O_THREADS},  {"resume", required_argument, 0, O_RESUME},
        {"limit-train", required_argument, 0, O_LTRAIN}, {"limit-test", required_argument, 0, O_LTEST},
        {"shard", no_argument, 0, O_SHARD},            {"log-json", required_argument, 0, O_JSON},
        {"log-every", required_argument, 0, O_EVERY},  {"checkpoint-dir", required_argument, 0, O_CKDIR},
        {"device", required_argument, 0, O_DEVICE},    {"tf32", no_argument, 0, O_TF32},
        {"no-cuda-graph", no_argument, 0, O_NOGRAPH},  {"version", no_argument, 0, O_VERSION},
        {"dump-steps", required_argument, 0, O_DSTEPS}, {"dump-dir", required_argument, 0, O_DDIR},
        {"help", no_argument, 0, O_HELP},
        {"keep-checkpoints", required_argument, 0, O_KEEP}, {"keep-best", no_argument, 0, O_KEEPBEST},
        {"csv", required_argument, 0, O_CSV},          {"tensorboard", required_argument, 0, O_TB},
        {"compress", required_argument, 0, O_COMPRESS},
        {"d", required_argument, 0, O_DIR}, /* the tutorial's -d */
        {0, 0, 0, 0},
    };
    int c;
    long long v;
    opterr = 0;
    while ((c = getopt_long_only(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_DIR: o->dir = optarg; break;
        case O_DATA: o->data = optarg; break;
        case O_DOWNLOAD: o->download = 1; break;
        case O_NOAUG: o->augment = 0; break;
        case O_SHARD: o->shard = 1; break;
        case O_RESUME: o->resume = optarg; break;
        case O_JSON: o->log_json = optarg; break;
        case O_CKDIR: o->checkpoint_dir = optarg; break;
        case O_DEVICE: *device = optarg; break;
        case O_TF32: *tf32 = 1; break;
        case O_COMPRESS:
            if (strcmp(optarg, "none") && strcmp(optarg, "fp16")) {
                fprintf(stderr, "cifar-train: --compress: '%s' is not none or fp16\n", optarg);
                return 1;
            }
            *fp16 = !strcmp(optarg, "fp16");
            break;
        case O_NOGRAPH: o->graphs = 0; break;
        case O_DDIR: o->dump_dir = optarg; break;
        case O_KEEPBEST: o->keep_best = 1; break;
        case O_CSV: o->csv = optarg; break;
        case O_TB: o->tensorboard = optarg; break;
        case O_KEEP: if (parse_count("--keep-checkpoints", optarg, 0, INT_MAX, &v)) return 1; o->keep_checkpoints = (int)v; break;
        case O_DSTEPS: if (parse_count("--dump-steps", optarg, 1, INT_MAX, &v)) return 1; o->dump_steps = (int)v; break;
        case O_EPOCHS: if (parse_count("--epochs", optarg, 1, INT_MAX, &v)) return 1; o->epochs = (int)v; break;
        case O_BATCH: if (parse_count("--batch-size", optarg, 1, INT_MAX / CIFAR_IMAGE_BYTES, &v)) return 1; o->batch = (int)v; break;
        case O_THREADS: if (parse_count("--threads", optarg, 1, INT_MAX, &v)) return 1; o->threads = (int)v; break;
        case O_LTRAIN: if (parse_count("--limit-train", optarg, 1, LLONG_MAX, &v)) return 1; o->limit_train = (size_t)v; break;
        case O_LTEST: if (parse_count("--limit-test", optarg, 1, LLONG_MAX, &v)) return 1; o->limit_test = (size_t)v; break;
        case O_EVERY: if (parse_count("--log-every", optarg, 0, INT_MAX, &v)) return 1; o->log_every = (int)v; break;
        case O_SEED: if (parse_count("--seed", optarg, 0, LLONG_MAX, &v)) return 1; o->seed = (uint64_t)v; break;
        case O_LR: {
            char *end;
            o->lr = strtod(optarg, &end);
            if (end == optarg || *end || !(o->lr > 0)) {
                fprintf(stderr, "cifar-train: --lr: '%s' is not a positive number\n", optarg);
                return 1;
            }
            break;
        }
        case O_VERSION: print_version(); return 2;
        case O_HELP: fputs(usage, stdout); return 2;
        default:
            fprintf(stderr, "cifar-train: unknown or incomplete option '%s'\n%s", argv[optind - 1], usage);
            return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cifar-train: unexpected argument '%s'\n%s", argv[optind], usage);
        return 1;
    }
    if (o->keep_best && o->keep_checkpoints == 0) {
        fprintf(stderr, "cifar-train: --keep-best goes with --keep-checkpoints N (N > 0)\n");
        return 1;
    }
    if (!o->dump_steps != !o->dump_dir) {
        fprintf(stderr, "cifar-train: --dump-steps and --dump-dir go together\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct train_options o;
    train_options_default(&o);
    o.generator = "cifar-train (slurm-batchai) " TRAINER_VERSION;
    const char *model = NULL;
    int evaluate = argc > 1 && strcmp(argv[1], "evaluate") == 0;
    if (evaluate) {
        if (argc < 3 || argv[2][0] == '-') {
            fprintf(stderr, "cifar-train: evaluate needs a model file\n%s", usage);
            return 1;
        }
        model = argv[2];
        argv += 2;
        argc -= 2;
        argv[0] = "cifar-train evaluate";
    }
    struct device_request req = {0};
    int tf32 = 0, fp16 = 0, status;
    char csv_path[4096];
    o.keep_checkpoints = -1; /* not given: batchai_defaults decides */
    int p = parse(argc, argv, &o, &req.want, &tf32, &fp16);
    if (p)
        return p == 2 ? 0 : 1;
    req.granted = gpu_grant(req.said, sizeof req.said) > 0;
    batchai_defaults(&o, csv_path, sizeof csv_path);
    if (!evaluate)
        train_catch_signals();
    if (!(o.kernels = choose_device(&req, &status)) || init_collectives(&o, &req, fp16, &status) != 0)
        return status;
    if (device_open(o.kernels, &req, tf32, &status) != 0) {
        coll_finalize();
        return status;
    }
    int rc = evaluate ? evaluate_run(model, &o) : train_run(&o);
    device_close(o.kernels);
    coll_finalize();
    return rc;
}
