# libcollective/: data-parallel collectives over MPI (host memory) and NCCL (device memory), coll-bench,
# and their tests (tests/collective/). See libcollective/README.md.
#   build/lib/libcollective.{a,so}   the library; needs MPI only
#   build/lib/libcollective_nccl.so  the NCCL backend, dlopen'ed by coll_init() when a device is asked for
#   build/bin/coll-bench             nccl-tests-style benchmark
#   make install                     also libcollective.pc (pkg-config) into LIBDIR/pkgconfig
LIBCOLL_INCLUDE := -Ilibcollective/include -Ilibcollective/src
# CUDA headers as system headers: their own warnings are not ours to fix.
libcollective_CFLAGS := $(LIBCOLL_INCLUDE) $(MPI_CFLAGS) $(if $(HAVE_CUDA),-isystem $(CUDA_HOME)/include)

LIBCOLL_SRCS := $(addprefix libcollective/src/,clock.c errors.c reduce.c half.c env.c check.c device_choice.c timeline.c \
                  mpi_backend.c device.c shm.c hier.c fusion.c coordinator.c stall.c hostctl.c progress.c watchdog.c \
                  queue.c init.c host_alloc.c)
LIBCOLL_LIBS := $(MPI_LIBS) -lpthread -ldl -lm
# The reduction loops (reduce.c's sum, mpi_backend.c's average over every gradient, half.c's conversions
# without F16C) are vectorised at -O3;
# -O2 left the average one scalar divss per element. Results are the same: no fast-math, each element
# rounded alike.
$(call obj-of,libcollective/src/mpi_backend.c libcollective/src/reduce.c libcollective/src/half.c): OPT := -O3 -g
LIBCOLL_A := $(BUILD)/lib/libcollective.a
LIBCOLL_SO := $(BUILD)/lib/libcollective.so
LIBCOLL_NCCL_SO := $(BUILD)/lib/libcollective_nccl.so
COLL_BENCH := $(BUILD)/bin/coll-bench

ifneq ($(HAVE_MPI),)
ALL += $(LIBCOLL_A) $(LIBCOLL_SO) $(COLL_BENCH) $(if $(HAVE_NCCL),$(LIBCOLL_NCCL_SO))
BENCHES += libcollective/bench/run-bench
INSTALL_RULES += install-libcollective
endif

$(LIBCOLL_A): $(call obj-of,$(LIBCOLL_SRCS))
	@mkdir -p $(@D)
	$(Q)$(call quiet,AR)rm -f $@ && ar rcs $@ $^

$(LIBCOLL_SO): $(call obj-of,$(LIBCOLL_SRCS))
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) -shared -Wl,-soname,libcollective.so $(LDHARDEN) -o $@ $^ $(LIBCOLL_LIBS)

$(LIBCOLL_NCCL_SO): $(call obj-of,libcollective/src/nccl_backend.c)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) -shared -Wl,-soname,libcollective_nccl.so $(LDHARDEN) -o $@ $^ $(CUDA_LIBS) $(NCCL_LIBS)

# coll-bench allocates device buffers itself for --mem device, so where CUDA exists it links libcudart.
$(call obj-of,libcollective/bench/coll_bench.c): CFLAGS += $(if $(HAVE_CUDA),-DCOLL_BENCH_CUDA)
$(COLL_BENCH): $(call obj-of,libcollective/bench/coll_bench.c) $(LIBCOLL_A)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(LDHARDEN) -o $@ $^ $(LIBCOLL_LIBS) $(if $(HAVE_CUDA),$(CUDA_LIBS))

.PHONY: install-libcollective
# libcollective.pc is written here, not at build time, so that it names the PREFIX and LIBDIR of this install.
install-libcollective: $(LIBCOLL_A) $(LIBCOLL_SO) $(COLL_BENCH)
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 libcollective/include/collective.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(LIBCOLL_A) $(LIBCOLL_SO) $(if $(HAVE_NCCL),$(LIBCOLL_NCCL_SO)) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(COLL_BENCH) $(DESTDIR)$(PREFIX)/bin/
	$(call install-man,libcollective/coll-bench.1)
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@VERSION@|$(VERSION)|' \
	    -e 's|@LIBS_PRIVATE@|$(strip $(LIBCOLL_LIBS))|' libcollective/libcollective.pc.in \
	    >$(DESTDIR)$(LIBDIR)/pkgconfig/libcollective.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/libcollective.pc

# Tests: sanitizer builds of the library and the test programs, run under mpirun by the scripts.
# The explicit pattern rule (shorter stem than the generic one) gives tests/collective/ the library's flags
# without touching the tests/ directory's shared tests_CFLAGS.
COLL_TEST_PROGS := test_collective test_faults test_device_pick test_timeline test_hier
COLL_TEST_BINS := $(addprefix $(BUILD)/tests/collective/,$(COLL_TEST_PROGS))

$(BUILD)/san/tests/collective/%.o: tests/collective/%.c
	@mkdir -p $(@D)
	$(Q)$(call quiet,CC)$(CC) $(SAN_CFLAGS) $(libcollective_CFLAGS) -c $< -o $@

# Static pattern rule: the objects are named targets, so make keeps them between builds.
$(COLL_TEST_BINS): $(BUILD)/tests/collective/%: $(BUILD)/san/tests/collective/%.o \
                   $(BUILD)/san/tests/collective/testlib.o $(call san-of,$(LIBCOLL_SRCS))
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_FLAGS) -o $@ $^ $(LIBCOLL_LIBS)

# The device choice rule alone (no MPI run): a unit test run directly.
COLL_CHOICE_TEST := $(BUILD)/tests/collective/test_device_choice
$(COLL_CHOICE_TEST): $(BUILD)/san/tests/collective/test_device_choice.o $(call san-of,libcollective/src/device_choice.c)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_FLAGS) -o $@ $^

# A stand-in NCCL plugin reporting COLL_STUB_GPUS devices, for test_device_pick.sh on machines without one.
COLL_NCCL_STUB := $(BUILD)/tests/collective/nccl_stub.so
$(COLL_NCCL_STUB): tests/collective/nccl_stub.c libcollective/src/nccl_plugin.h libcollective/src/backend.h
	@mkdir -p $(@D)
	$(Q)$(call quiet,CC)$(CC) $(BASE_CFLAGS) $(libcollective_CFLAGS) -fPIC -shared -o $@ $<

# The float16 conversion alone, its results checked by numpy (test_half.sh).
COLL_HALF_TEST := $(BUILD)/tests/collective/test_half
$(COLL_HALF_TEST): $(BUILD)/san/tests/collective/test_half.o $(call san-of,libcollective/src/half.c)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_FLAGS) -o $@ $^

ifneq ($(HAVE_MPI),)
TEST_BINS += $(COLL_TEST_BINS) $(COLL_CHOICE_TEST) $(COLL_HALF_TEST) $(COLL_NCCL_STUB) $(if $(HAVE_NCCL),$(LIBCOLL_NCCL_SO))
TESTS += $(COLL_CHOICE_TEST)
endif
# Counted whether or not MPI is here: without it they skip, saying why (tests/collective/mpi-env.sh).
TESTS += tests/collective/test_correctness.sh tests/collective/test_faults.sh tests/collective/test_liveness.sh \
         tests/collective/test_nccl.sh tests/collective/test_device_pick.sh tests/collective/test_timeline.sh \
         tests/collective/test_srun.sh tests/collective/test_hosts.sh \
         tests/collective/test_half.sh
