# contrib/: packaging, from the current build. `make deb` builds build/slurm-batchai_<version>_<arch>.deb,
# `make rpm` build/slurm-batchai-<version>-1.<arch>.rpm (RHEL's layout, with Debian's or RHEL's rpmbuild).
deb: all
	BUILD=$(BUILD) contrib/deb/build-deb $(BUILD)
rpm: all
	BUILD=$(BUILD) SLURM_INCLUDE=$(SLURM_INCLUDE) contrib/rpm/build-rpm $(BUILD)
.PHONY: deb rpm
TESTS += tests/packaging/test_deb.sh tests/packaging/test_rpm.sh tests/packaging/test_install.sh \
         tests/packaging/test_man.sh tests/packaging/test_site_slurm.sh tests/packaging/test_demo.sh
# The demo starts a cluster of its own.
CLUSTER_USERS += tests/packaging/test_demo.sh
