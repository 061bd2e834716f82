# trainer/: cifar-train, the tutorial's CIFAR-10 model in C (trainer/README.md).
#   build/bin/cifar-train          the command
#   tests/trainer/test_*.c         unit tests, built with sanitizers (build/tests/trainer/test_*)
#   tests/trainer/test_*.sh        tests that run the optimized cifar-train / MPI programs
#   bench/                         `make bench`: ours vs the PyTorch peer
trainer_CFLAGS := -Itrainer/src -Ilibcollective/include -fopenmp $(HDF5_CFLAGS) $(BLAS_CFLAGS)
# sqrtf without errno, so that the RMSprop loop vectorises (nothing in the trainer reads errno after maths).
trainer_CFLAGS += -fno-math-errno
tests_CFLAGS += $(trainer_CFLAGS)

# TRAINER_CORE: everything but the distributed run and the command (no MPI: unit tests link only this).
TRAINER_MAIN := trainer/src/main.c
TRAINER_RUN := trainer/src/train.c
TRAINER_CORE := $(filter-out $(TRAINER_MAIN) $(TRAINER_RUN),$(wildcard trainer/src/*.c))
TRAINER_SRCS := $(TRAINER_CORE) $(TRAINER_RUN)
TRAINER_LIBS := -fopenmp -ldnnl $(BLAS_LIBS) $(HDF5_LIBS) -lm
LIBCOLLECTIVE_A := $(BUILD)/lib/libcollective.a
TRAINER_MPI_LDLIBS = $(LIBCOLLECTIVE_A) $(TRAINER_LIBS) $(MPI_LIBS)

# The kernels are the hot path: -O3 for the release objects (sanitizer objects keep SAN_CFLAGS's -O1).
$(call obj-of,$(TRAINER_SRCS) $(TRAINER_MAIN)): OPT := -O3 -g

$(BUILD)/bin/cifar-train: $(call obj-of,$(TRAINER_MAIN) $(TRAINER_SRCS)) $(LIBCOLLECTIVE_A)
	@mkdir -p $(@D)
	$(CC) $(LDHARDEN) -o $@ $(filter %.o,$^) $(TRAINER_MPI_LDLIBS)

# Unit tests: one program per tests/trainer/test_*.c, linked with the sanitizer build of the trainer
# core; test_mpi_*.c programs also get the training run and libcollective (they run under mpirun).
TRAINER_TEST_SRCS := $(wildcard tests/trainer/test_*.c)
TRAINER_TEST_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TRAINER_TEST_SRCS))
TRAINER_MPI_TESTS := $(filter $(BUILD)/tests/trainer/test_mpi_%,$(TRAINER_TEST_BINS))
# Helper programs of the script tests (not tests themselves).
TRAINER_TEST_TOOLS := $(BUILD)/tests/trainer/step_dump $(BUILD)/tests/trainer/random_dump
$(filter-out $(TRAINER_MPI_TESTS),$(TRAINER_TEST_BINS)) $(TRAINER_TEST_TOOLS): $(BUILD)/tests/%: $(BUILD)/san/tests/%.o $(call san-of,$(TRAINER_CORE))
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $(filter %.o,$^) $(TRAINER_LIBS)
$(TRAINER_MPI_TESTS): $(BUILD)/tests/%: $(BUILD)/san/tests/%.o $(call san-of,$(TRAINER_SRCS)) $(LIBCOLLECTIVE_A)
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $(filter %.o,$^) $(TRAINER_MPI_LDLIBS)

# Tests that are scripts (MPI runs, numpy/h5py references) use the programs above and cifar-train.
TRAINER_TEST_SCRIPTS := $(wildcard tests/trainer/test_*.sh)

# cifar-train and the MPI tests need libcollective; until its module exists only the core is built.
ifneq ($(wildcard libcollective/module.mk),)
ALL += $(BUILD)/bin/cifar-train
TEST_BINS += $(TRAINER_TEST_BINS) $(TRAINER_TEST_TOOLS) $(BUILD)/bin/cifar-train $(BUILD)/bin/trainer-bench
TESTS += $(filter-out $(TRAINER_MPI_TESTS),$(TRAINER_TEST_BINS)) $(TRAINER_TEST_SCRIPTS)
else
TEST_BINS += $(filter-out $(TRAINER_MPI_TESTS),$(TRAINER_TEST_BINS))
TESTS += $(filter-out $(TRAINER_MPI_TESTS),$(TRAINER_TEST_BINS))
endif
BENCHES += bench/trainer-bench.sh
INSTALL_RULES += install-trainer

.PHONY: install-trainer
install-trainer: $(BUILD)/bin/cifar-train
	install -D -m 0755 $(BUILD)/bin/cifar-train $(DESTDIR)$(PREFIX)/bin/cifar-train

$(call obj-of,$(TRAINER_MAIN)): CFLAGS += -DTRAINER_VERSION='"$(VERSION)"'

include tests/trainer/io.mk
include trainer/cuda.mk

# bench/: trainer-bench (ours) and the PyTorch peer, side by side (`make bench`).
$(call obj-of,bench/trainer_bench.c): OPT := -O3 -g
bench_CFLAGS := $(trainer_CFLAGS)
$(BUILD)/bin/trainer-bench: $(call obj-of,bench/trainer_bench.c $(TRAINER_SRCS)) $(LIBCOLLECTIVE_A)
	@mkdir -p $(@D)
	$(CC) $(LDHARDEN) -o $@ $(filter %.o,$^) $(TRAINER_MPI_LDLIBS)

# `make bench-accuracy` (outside `make check` and `make bench`: hours on a CPU): the recipe to the end, seeds
# 0 1 2, cifar-train next to the PyTorch peer, a table of test accuracy per seed, means and wall times
# (bench/accuracy-bench.sh; EPOCHS, SEEDS, THREADS, DEVICE, TORCH_PYTHON override).
.PHONY: bench-accuracy
bench-accuracy: $(BUILD)/bin/cifar-train
	BUILD=$(BUILD) bench/accuracy-bench.sh
