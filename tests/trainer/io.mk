# tests/trainer/io.mk: the trainer's I/O layer (CIFAR-10 loader + download, augmentation, Keras HDF5 files,
# atomic replacement) and its tests, included at the end of trainer/module.mk.
#
# TRAINER_IO_SRCS is the I/O part of cifar-train; it links with $(HDF5_LIBS) -lm.
# The test programs are tests/trainer/test_io_*.c (C, sanitizer build); test_io_keras and test_io_atomic
# run the h5py checks in tests/trainer/test_io_h5check.py with Debian's /usr/bin/python3.
#
# trainer/module.mk may already build and register every tests/trainer/test_*.c (with all trainer
# objects); then nothing more is done here. Otherwise these rules build each test against the I/O sources
# only, so the I/O tests also run on their own:
#   make -f mk/config.mk -f mk/rules.mk -f tests/trainer/io.mk trainer-io-check

TRAINER_IO_SRCS := trainer/src/io/cifar_data.c trainer/src/io/md5.c trainer/src/input/augment.c \
                   trainer/src/io/keras_h5.c trainer/src/io/atomic_file.c \
                   $(addprefix common/,sha256.c hash_block.c write_all.c strbuf.c)
IO_TESTS := test_io_cifar test_io_augment test_io_keras test_io_atomic
IO_TEST_BINS := $(patsubst %,$(BUILD)/tests/trainer/%,$(IO_TESTS))

ifeq ($(filter $(IO_TEST_BINS),$(TRAINER_TEST_BINS)),)
# Alone, the folders' flags that trainer/module.mk would give (keras_h5.c includes <hdf5.h>, which Debian
# keeps in /usr/include/hdf5/serial).
trainer_CFLAGS ?= -Itrainer/src -Icommon $(HDF5_CFLAGS)
tests/trainer_CFLAGS ?= $(trainer_CFLAGS)

$(IO_TEST_BINS): $(BUILD)/tests/trainer/%: $(BUILD)/san/tests/trainer/%.o $(call san-of,$(TRAINER_IO_SRCS))
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_FLAGS) -o $@ $^ $(HDF5_LIBS) -lm

TEST_BINS += $(IO_TEST_BINS)
TESTS += $(IO_TEST_BINS)
endif

.PHONY: trainer-io-check
trainer-io-check: $(IO_TEST_BINS)
	@BUILD=$(BUILD) tests/run-tests $(IO_TEST_BINS)
