# slurm-batchai: one build for everything.
#   make              build everything that can be built here into build/
#   make check        install what is missing, then the whole test suite (closing line: N passed, N failed,
#                     N skipped); make check-run runs the suite alone
#   make check-unit   the tests that need no Slurm cluster and no Slurm build (tests/README.md)
#   make test T=NAME  the tests whose file is NAME or NAME.sh, on this machine's Slurm (tests/README.md)
#   make bench        benchmarks (numbers, not assertions)
#   make demo         install deps, build, start a throwaway Slurm cluster, run the tutorial's job (again: kept
#                     files); make demo-shell: a shell as its user; make demo-stop: says what it removes
#   make install      PREFIX=/usr/local LIBDIR=$(PREFIX)/lib MANDIR=$(PREFIX)/share/man DESTDIR= (mk/config.mk)
#   make deps         install the Debian packages the project needs (idempotent, root or sudo)
# Each component describes itself in its module.mk by adding to these lists:
#   ALL      files `make` builds          TEST_BINS  files `make check` builds first
#   TESTS    test programs the runner runs (exit 0 pass, 77 skip, else fail)
#   CLUSTER_USERS  tests outside tests/cluster/ that start a Slurm cluster (left out of check-unit)
#   BENCHES  benchmark programs `make bench` runs    INSTALL_RULES  targets `make install` runs
#   NOT_BUILT  parts left out for a missing dependency, each with not_built_why_<part> (make config)
.DEFAULT_GOAL := all
SHELL := /bin/bash

include mk/config.mk
include mk/rules.mk

ALL :=
NOT_BUILT :=
TEST_BINS :=
TESTS :=
CLUSTER_USERS :=
BENCHES :=
INSTALL_RULES :=

include $(sort $(wildcard */module.mk))
include tests/structure/structure.mk

.PHONY: all check check-run check-unit test bench install deps fuzz clean config demo demo-shell demo-stop
all: $(ALL)

# The dependencies found, what each is for and the Debian package that provides it.
config:
	@printf '  %-30s %-8s %s\n' dependency found 'package; what needs it'
	@$(foreach d,$(DEPS),printf '  %-30s %-8s %s\n' '$(dep_name_$(d))' '$(call found,$(dep_have_$(d)))' '$(dep_pkg_$(d))';)
	@$(foreach p,$(NOT_BUILT),printf '  not built: %s (%s)\n' '$(p)' '$(not_built_why_$(p))';)

# check installs what is missing first, then runs in a new make, which detects what was just installed.
check:
	@contrib/install-deps.sh
	@$(MAKE) --no-print-directory check-run

# JOBS=N: up to N tests at once where tests/run-tests finds that safe (tests/README.md); results print in order.
JOBS ?= 2
check-run: all $(TEST_BINS)
	@BUILD=$(BUILD) JOBS=$(JOBS) tests/run-tests $(TESTS)

# Without a cluster or a Slurm build: tests/cluster/*, their runs on other releases and CLUSTER_USERS are left
# out, and so is building those releases' plugins. Left out too, to stay within 3 minutes on 2 cores (make check
# runs them): UNIT_SLOW, the tests that spend most of their time compressing the GPU kit (test_clean_root),
# waiting out stall timeouts (test_liveness), starting mpirun a dozen times (test_correctness) or timing the
# benchmarks (test_bench_tools), or starting hosts of their own (test_hosts); and the fuzzer gets 5 seconds instead of 20.
UNIT_SLOW := tests/gpukit/test_clean_root.sh tests/collective/test_liveness.sh tests/collective/test_correctness.sh \
             tests/trainer/test_bench_tools.sh tests/collective/test_hosts.sh tests/trainer/test_hosts.sh
UNIT_TESTS = $(filter-out tests/cluster/% $(BUILD)/slurm-% $(CLUSTER_USERS) $(UNIT_SLOW),$(TESTS))
UNIT_BINS = $(filter-out $(BUILD)/slurm-%,$(TEST_BINS))
check-unit: all $(UNIT_BINS)
	@BUILD=$(BUILD) JOBS=$(JOBS) FUZZ_SECONDS=$${FUZZ_SECONDS:-5} tests/run-tests $(UNIT_TESTS)

# One test (or a few) by name: T=test_io_cifar, T=mount, T="mount secrets".
test: all $(UNIT_BINS)
	@tests=($(foreach t,$(T),$(filter %/$(t) %/$(t).sh,$(filter-out $(BUILD)/slurm-%,$(TESTS))))); \
	[ $${#tests[@]} -gt 0 ] || { echo "make test T=NAME: no test named '$(T)' (the names are the files in TESTS)" >&2; exit 2; }; \
	BUILD=$(BUILD) JOBS=$(JOBS) tests/run-tests "$${tests[@]}"

# The benchmarks compare against peers (PyTorch, hyperfine): install them first.
bench: all $(TEST_BINS)
	contrib/install-deps.sh bench
	@set -e; for b in $(BENCHES); do echo "== $$b"; $$b; done

install: all $(INSTALL_RULES)

deps:
	contrib/install-deps.sh

demo:
	contrib/demo/demo start

demo-shell:
	contrib/demo/demo shell

demo-stop:
	contrib/demo/demo stop

clean:
	rm -rf $(BUILD)

# The compilers' dependency files, except those whose source (their first prerequisite) is gone: a file moved
# by git mv would otherwise stop a build in an old checkout at "No rule to make target" for its old path.
-include $(shell find $(BUILD) -name '*.d' -exec awk 'FNR == 1 { sub(/^[^:]*: */, ""); if ($$0 ~ /^\\?$$/) getline; \
    sub(/^ +/, ""); sub(/[ \\].*/, ""); if ((getline line < $$0) >= 0) print FILENAME; close($$0); nextfile }' {} + 2>/dev/null)
