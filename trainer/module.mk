# trainer/: cifar-train, the tutorial's CIFAR-10 model in C (trainer/README.md).
#   build/bin/cifar-train          the command
#   tests/trainer/test_*.c         unit tests, built with sanitizers (build/tests/trainer/test_*)
#   tests/trainer/test_*.sh        tests that run the optimized cifar-train / MPI programs
#   trainer/bench/                 `make bench`: ours vs the PyTorch peer
# trainer/src/, one folder per role (headers are included as "folder/name.h" from trainer/src):
#   core/   the model's layer table, the kernel table's contract (kernels.h, input_engine.h), RMSprop, the
#           counter-based rng, the image shape and augmentation parameters (image.h)
#   cpu/    the CPU kernel table (oneDNN, OpenBLAS, our Winograd) and its inference engine
#   cuda/   the CUDA kernel table (libcifar_train_cuda.so, trainer/cuda.mk) and its loader
#   input/  the training batches: augmentation and the device input ring
#   io/     files: CIFAR-10 data, Keras HDF5 models and checkpoints, atomic replacement, step dumps, the
#           Keras CSV log and TensorBoard event files
#   run/    the training run over libcollective: epochs, steps, progress, recipe agreement, draws, what
#           people watch (watch.h: CSV, TensorBoard, gnuplot's PNG), the checkpoints kept
#   cli/    the cifar-train command, and whether the launcher gave it a GPU (gpu_grant)
# A folder includes only its own headers and those of folders before it: core, cpu and cuda, io, input, run,
# cli (make check-structure; tests/structure/layers.conf).
trainer_CFLAGS := -Itrainer/src -Icommon -Ilibcollective/include -fopenmp $(HDF5_CFLAGS) $(BLAS_CFLAGS)
# sqrtf without errno, so that the RMSprop loop vectorises (nothing in the trainer reads errno after maths).
trainer_CFLAGS += -fno-math-errno
tests/trainer_CFLAGS := $(trainer_CFLAGS)

# TRAINER_CORE: everything but the distributed run and the command (no MPI: unit tests link only this).
TRAINER_MAIN := trainer/src/cli/main.c
# The files of the run that talk to libcollective (the rest of run/ is in the core).
TRAINER_RUN := $(addprefix trainer/src/run/,train.c run_state.c initial_state.c epoch.c evaluate.c step_core.c \
                                            stop_signals.c any_failed.c output_dirs.c train_data.c)
TRAINER_CORE := $(filter-out $(TRAINER_MAIN) $(TRAINER_RUN),$(wildcard trainer/src/*/*.c))
# The kernels are the hot path: -O3 for the release objects (sanitizer objects keep SAN_CFLAGS's -O1).
$(call obj-of,$(TRAINER_CORE) $(TRAINER_RUN) $(TRAINER_MAIN)): OPT := -O3 -g
# The project's one SHA-256 (data checksums, checkpoint checksums), the block buffering and padding that
# io/md5.c shares, and its one loop that writes a whole buffer: common/'s, as the plugin links them.
TRAINER_CORE += $(COMMON_SRCS)
TRAINER_SRCS := $(TRAINER_CORE) $(TRAINER_RUN)
TRAINER_LIBS := -fopenmp -ldnnl $(BLAS_LIBS) $(HDF5_LIBS) -lm
LIBCOLLECTIVE_A := $(BUILD)/lib/libcollective.a
TRAINER_MPI_LDLIBS = $(LIBCOLLECTIVE_A) $(TRAINER_LIBS) $(MPI_LIBS)


$(BUILD)/bin/cifar-train: $(call obj-of,$(TRAINER_MAIN) $(TRAINER_SRCS)) $(LIBCOLLECTIVE_A)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(LDHARDEN) -o $@ $(filter %.o,$^) $(TRAINER_MPI_LDLIBS)

# Unit tests: one program per tests/trainer/test_*.c, linked with the sanitizer build of the trainer
# core; test_mpi_*.c programs also get the training run and libcollective (they run under mpirun).
TRAINER_TEST_SRCS := $(wildcard tests/trainer/test_*.c)
TRAINER_TEST_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TRAINER_TEST_SRCS))
TRAINER_MPI_TESTS := $(filter $(BUILD)/tests/trainer/test_mpi_%,$(TRAINER_TEST_BINS))
# Helper programs of the script tests (not tests themselves).
TRAINER_TEST_TOOLS := $(BUILD)/tests/trainer/step_dump $(BUILD)/tests/trainer/random_dump
$(filter-out $(TRAINER_MPI_TESTS),$(TRAINER_TEST_BINS)) $(TRAINER_TEST_TOOLS): $(BUILD)/tests/%: $(BUILD)/san/tests/%.o $(call san-of,$(TRAINER_CORE))
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_FLAGS) -o $@ $(filter %.o,$^) $(TRAINER_LIBS)
$(TRAINER_MPI_TESTS): $(BUILD)/tests/%: $(BUILD)/san/tests/%.o $(call san-of,$(TRAINER_SRCS)) $(LIBCOLLECTIVE_A)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_FLAGS) -o $@ $(filter %.o,$^) $(TRAINER_MPI_LDLIBS)

# Stand-ins for a libcifar_train_cuda.so of another build (test_cuda_abi.sh): a getter with another ABI
# number, and no getter.
TRAINER_ABI_STUBS := $(BUILD)/tests/trainer/cuda_abi_other.so $(BUILD)/tests/trainer/cuda_abi_none.so
$(BUILD)/tests/trainer/cuda_abi_other.so: STUB_FLAGS := -DSTUB_OTHER_ABI
$(TRAINER_ABI_STUBS): tests/trainer/cuda_abi_stub.c trainer/src/cuda/cuda_plugin.h trainer/src/core/kernels.h
	@mkdir -p $(@D)
	$(Q)$(call quiet,CC)$(CC) $(BASE_CFLAGS) $(tests/trainer_CFLAGS) $(STUB_FLAGS) -fPIC -shared -o $@ $<

# Tests that are scripts (MPI runs, numpy/h5py references) use the programs above and cifar-train.
TRAINER_TEST_SCRIPTS := $(wildcard tests/trainer/test_*.sh)

# The core needs HDF5, oneDNN and OpenBLAS; cifar-train, trainer-bench and the MPI tests also libcollective
# (Open MPI). What cannot be built is left out, and its tests skip saying so (make config says why).
TRAINER_OK := $(and $(HAVE_HDF5),$(HAVE_DNNL),$(HAVE_BLAS))
TRAINER_RUN_OK := $(and $(TRAINER_OK),$(HAVE_MPI))
ifneq ($(TRAINER_OK),)
TEST_BINS += $(filter-out $(TRAINER_MPI_TESTS),$(TRAINER_TEST_BINS)) $(TRAINER_TEST_TOOLS)
endif
ifneq ($(TRAINER_RUN_OK),)
ALL += $(BUILD)/bin/cifar-train
TEST_BINS += $(TRAINER_MPI_TESTS) $(BUILD)/bin/cifar-train $(BUILD)/bin/trainer-bench $(BUILD)/bin/flops-probe $(TRAINER_ABI_STUBS)
BENCHES += trainer/bench/trainer-bench.sh
INSTALL_RULES += install-trainer
endif
TESTS += $(filter-out $(TRAINER_MPI_TESTS),$(TRAINER_TEST_BINS)) $(TRAINER_TEST_SCRIPTS)
.PHONY: install-trainer
install-trainer: $(BUILD)/bin/cifar-train
	install -D -m 0755 $(BUILD)/bin/cifar-train $(DESTDIR)$(PREFIX)/bin/cifar-train
	$(call install-man,trainer/cifar-train.1)

$(call obj-of,$(TRAINER_MAIN)): CFLAGS += -DTRAINER_VERSION='"$(VERSION)"'

include trainer/cuda.mk

# trainer/bench/: trainer-bench (ours) and the PyTorch peer, side by side (`make bench`).
$(call obj-of,trainer/bench/trainer_bench.c): OPT := -O3 -g
$(BUILD)/bin/trainer-bench: $(call obj-of,trainer/bench/trainer_bench.c $(TRAINER_SRCS)) $(LIBCOLLECTIVE_A)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(LDHARDEN) -o $@ $(filter %.o,$^) $(TRAINER_MPI_LDLIBS)

# flops-probe: the machine's FP32 FMA peak at 1 and 2 threads, the denominator of the bench's share of peak
# (its instruction set is picked at run time, so the build needs no -march).
$(call obj-of,trainer/bench/flops_probe.c): OPT := -O2 -g
$(BUILD)/bin/flops-probe: $(call obj-of,trainer/bench/flops_probe.c)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(LDHARDEN) -pthread -o $@ $(filter %.o,$^)

# `make bench-accuracy` (outside `make check` and `make bench`: hours on a CPU): the recipe to the end, seeds
# 0 1 2, cifar-train next to the PyTorch peer, a table of test accuracy per seed, means and wall times
# (trainer/bench/accuracy-bench.sh; EPOCHS, SEEDS, THREADS, DEVICE, TORCH_PYTHON override).
.PHONY: bench-accuracy
bench-accuracy: $(BUILD)/bin/cifar-train
	BUILD=$(BUILD) trainer/bench/accuracy-bench.sh

# `make bench-ab OLD=REV`: cifar-train end to end on the CPU, REV's build (a worktree under $(BUILD)/ab/)
# against this one, alternating (trainer/bench/end-to-end-ab.sh; OLD_BUILD=DIR instead of OLD, ROUNDS).
.PHONY: bench-ab
bench-ab: $(BUILD)/bin/cifar-train
	BUILD=$(BUILD) OLD=$(OLD) trainer/bench/end-to-end-ab.sh

# `make bench-accuracy-fp16`: the recipe to the end at 2 hosts x 1 rank, gradients across hosts as float32 and as
# float16, per seed (trainer/bench/accuracy-fp16.sh; root, SEEDS, RATE).
.PHONY: bench-accuracy-fp16
bench-accuracy-fp16: $(BUILD)/bin/cifar-train
	BUILD=$(BUILD) trainer/bench/accuracy-fp16.sh

# `make bench-scaling`: cifar-train against PyTorch DDP (gloo) in 1 process (1 and 2 threads), 2 processes
# on this host, 2 ranks across the local 2-node Slurm cluster and 2 hosts x 1 rank over shaped hostnet links
# (with and without fp16), step only and end to end, with
# efficiency and where the step time went (trainer/bench/bench-scaling.sh; ROUNDS overrides).
.PHONY: bench-scaling
bench-scaling: $(BUILD)/bin/cifar-train
	BUILD=$(BUILD) trainer/bench/bench-scaling.sh

# `make scaling-model`: docs/scaling-model.md's tables, the model fitted to bench-scaling's 2-host rows
# (trainer/bench/scaling_model.py; python3, no dependencies, nothing measured).
.PHONY: scaling-model
scaling-model:
	python3 trainer/bench/scaling_model.py
