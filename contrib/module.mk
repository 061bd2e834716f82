# contrib/: packaging. `make deb` builds build/slurm-batchai_<version>_<arch>.deb from the current build.
deb: all
	BUILD=$(BUILD) contrib/deb/build-deb $(BUILD)
.PHONY: deb
TESTS += tests/packaging/test_deb.sh tests/packaging/test_install.sh tests/packaging/test_man.sh
