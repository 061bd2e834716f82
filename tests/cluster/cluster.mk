# tests/cluster/: scenario tests against a real two-node Slurm cluster (contrib/localcluster) with the
# plugin loaded; included from spank_plugin/plugin.mk whether or not the plugin can be built here. Each
# program starts and stops its own cluster (under a second) and skips (77) where it cannot run: not root,
# Slurm or munge not installed, or the plugin not built.
CLUSTER_TESTS := $(sort $(wildcard tests/cluster/*.sh))
CLUSTER_TESTS := $(filter-out tests/cluster/lib.sh,$(CLUSTER_TESTS))
TESTS += $(CLUSTER_TESTS)
ifneq ($(HAVE_SLURM),)
TEST_BINS += $(SPANK_SO) $(BUILD)/bin/batchai-job
BENCHES += spank_plugin/bench/submit-overhead.sh
endif

# A FUSE file system whose reads never answer, for hostile_fuse.sh (kernel headers only; no libfuse).
$(BUILD)/tests/fuse_hang: tests/cluster/fuse_hang.c
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(BASE_CFLAGS) -o $@ $<
TEST_BINS += $(BUILD)/tests/fuse_hang
