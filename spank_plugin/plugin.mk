# spank_plugin/plugin.mk: the SPANK plugin spank_batchai.so, its install rule, the cluster tests and the
# submit-overhead benchmark. Included by spank_plugin/module.mk. Built only where Slurm's spank.h is
# installed (libslurm-dev), and the job-file library's (module.mk): the plugin must match the Slurm it is
# loaded by.
ifneq ($(and $(HAVE_SLURM),$(JOBLIB_OK)),)

SPANK_SRCS := $(addprefix spank_plugin/spank/,spank_dispatch.c spank_common.c handoff.c spank_alloc.c \
                                              spank_remote.c spank_prolog.c spank_user.c spank_task_exit.c \
                                              plan_wire.c plan_child.c) \
              $(addprefix spank_plugin/node/,rootfs.c as_user.c)
SPANK_OBJS := $(call obj-of,$(SPANK_SRCS))
SPANK_SO   := $(BUILD)/lib/spank_batchai.so
SPANK_LDS  := spank_plugin/spank/spank_batchai.lds

# Hidden by default; the dispatch file and the linker script export only slurm_spank_* and plugin_*.
# A site's Slurm outside /usr/include is a system directory too: its headers' own warnings (slurm.h has
# unprototyped function pointers) are not ours to fix under -Werror.
$(SPANK_OBJS): spank_plugin_CFLAGS += -fvisibility=hidden $(if $(filter-out /usr/include,$(SLURM_INCLUDE)),-isystem $(SLURM_INCLUDE))

# Objects built against other Slurm headers are rebuilt: -MMD does not list headers found through -isystem,
# so the headers' directory is recorded, and rewritten only when it changes.
SLURM_INCLUDE_STAMP := $(BUILD)/slurm-include
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(SLURM_INCLUDE_STAMP) 2>/dev/null)" = "$(SLURM_INCLUDE)" ] || \
    echo "$(SLURM_INCLUDE)" >$(SLURM_INCLUDE_STAMP); })
$(SPANK_OBJS): $(SLURM_INCLUDE_STAMP)

# A feature test, not a version test (spank_slurm.h says why the plugin sets it): does the probe compile?
SLURM_HAS_INIT_FAILURE_MODE := $(shell $(CC) -std=c11 -fsyntax-only -isystem $(SLURM_INCLUDE) \
    spank_plugin/spank/probe_init_failure_mode.c 2>/dev/null && echo 1)
$(call obj-of,spank_plugin/spank/spank_dispatch.c): spank_plugin_CFLAGS += \
    $(if $(SLURM_HAS_INIT_FAILURE_MODE),-DBAI_HAVE_INIT_FAILURE_MODE)

# handoff.[ch] alone spell the allocator's handoff to the nodes (handoff.h): the plugin is not built while
# another file under spank/ or node/ names a job control variable, reads one through SPANK_/SLURM_SPANK_, or
# sets one.
HANDOFF_CHECK := $(BUILD)/stamp/handoff-names
HANDOFF_PATTERN := "(SLURM_)?SPANK_|BATCHAI_(JOB_FILE|JOB_DIGEST|JOB_TEXT|LOG_DIR|SCRIPT)|spank_job_control_[a-z]+ ?\(
$(HANDOFF_CHECK): $(filter-out %/handoff.c %/handoff.h,$(wildcard spank_plugin/spank/*.[ch] spank_plugin/node/*.[ch]))
	$(Q)if grep -nE '$(HANDOFF_PATTERN)' $^; then \
	    echo "spank_plugin/plugin.mk: only spank/handoff.c may name the handoff's variables (above)" >&2; exit 1; fi
	@mkdir -p $(@D) && touch $@

# The plugin runs batchai-plan from its own directory: built with it (a release's build asks for the plugin
# alone, tests/cluster/cluster.mk).
$(SPANK_SO): $(SPANK_OBJS) $(JOBLIB) $(SPANK_LDS) $(HANDOFF_CHECK) | $(BUILD)/lib/batchai-plan
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) -shared $(LDHARDEN) -Wl,-z,noexecstack -Wl,--version-script=$(SPANK_LDS) -o $@ \
		$(SPANK_OBJS) $(JOBLIB) $(JOBLIB_LIBS)

ALL += $(SPANK_SO)

# batchai-plan, the job file's parser the prolog runs as the job's user (spank/plan_child.h), next to the
# plugin, where the plugin looks for it. The one in $(BUILD)/lib is the tests': it takes the planted faults of
# BAI_PLAN_FAULTS (tests/cluster/hostile_plan.sh). make install installs the one without.
PLAN_SRCS := spank_plugin/spank/batchai_plan.c spank_plugin/spank/plan_wire.c
PLAN_CFLAGS = $(BASE_CFLAGS) $(spank_plugin_CFLAGS) $(if $(HAVE_SECCOMP),-DBAI_HAVE_SECCOMP)
PLAN_LIBS = $(JOBLIB) $(JOBLIB_LIBS) $(if $(HAVE_SECCOMP),$(SECCOMP_LIBS))
$(BUILD)/lib/batchai-plan: $(PLAN_SRCS) $(JOBLIB)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(PLAN_CFLAGS) -DBAI_PLAN_FAULTS $(LDHARDEN) -o $@ $(PLAN_SRCS) $(PLAN_LIBS)
$(BUILD)/release/batchai-plan: $(PLAN_SRCS) $(JOBLIB)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(PLAN_CFLAGS) $(LDHARDEN) -o $@ $(PLAN_SRCS) $(PLAN_LIBS)
ALL += $(BUILD)/lib/batchai-plan $(BUILD)/release/batchai-plan

# make install: the plugin into Slurm's plugin directory, an example plugstack.conf.d entry, spank_batchai(8).
# SLURM_PLUGIN_DIR comes from pkg-config (Debian: /usr/lib/<multiarch>/slurm-wlm); SLURM_SYSCONF_DIR
# is where slurm.conf lives. Both honour DESTDIR.
SLURM_SYSCONF_DIR ?= /etc/slurm
# job_temp made at boot, root's (contrib/tmpfiles/slurm-batchai.conf): systemd-tmpfiles reads
# /usr/local/lib/tmpfiles.d as well as /usr/lib/tmpfiles.d, so PREFIX's lib/ (not LIBDIR, which may be
# multiarch) is right for both a local install and a package.
TMPFILES_DIR ?= $(PREFIX)/lib/tmpfiles.d
install-spank-plugin: $(SPANK_SO) $(BUILD)/release/batchai-plan
	install -D -m 0644 $(SPANK_SO) $(DESTDIR)$(SLURM_PLUGIN_DIR)/spank_batchai.so
	install -D -m 0755 $(BUILD)/release/batchai-plan $(DESTDIR)$(SLURM_PLUGIN_DIR)/batchai-plan
	install -D -m 0644 contrib/plugstack/batchai.conf $(DESTDIR)$(SLURM_SYSCONF_DIR)/plugstack.conf.d/batchai.conf.example
	install -D -m 0644 contrib/tmpfiles/slurm-batchai.conf $(DESTDIR)$(TMPFILES_DIR)/slurm-batchai.conf
	$(call install-man,spank_plugin/spank/spank_batchai.8)
	@echo "installed $(DESTDIR)$(SLURM_PLUGIN_DIR)/spank_batchai.so; enable it by copying"
	@echo "  $(SLURM_SYSCONF_DIR)/plugstack.conf.d/batchai.conf.example to batchai.conf (see spank_plugin/README.md)"
INSTALL_RULES += install-spank-plugin
.PHONY: install-spank-plugin

# `make bench-start` (outside `make bench`: a cluster of up to 32 separate network hosts, minutes): the
# start time the plugin adds at N nodes, Batch AI job against a plain one (spank_plugin/bench/bench-start.sh;
# HOSTS_COUNTS, RUNS override).
.PHONY: bench-start
bench-start: $(SPANK_SO) $(BUILD)/bin/batchai-job
	BUILD=$(BUILD) spank_plugin/bench/bench-start.sh

else
NOT_BUILT += spank_batchai.so
not_built_why_spank_batchai.so := it needs $(strip $(if $(HAVE_SLURM),,$(dep_name_slurm) (libslurm-dev)) $(BATCHAI_JOB_MISSING))
endif

# The cluster tests count whether or not the plugin could be built: without it they skip, saying why.
include tests/cluster/cluster.mk
