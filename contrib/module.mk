# contrib/: packaging. `make deb` builds build/slurm-batchai_<version>_<arch>.deb.
deb: all
	contrib/deb/build-deb $(BUILD)
.PHONY: deb
TESTS += tests/packaging/test_deb.sh tests/packaging/test_install.sh tests/packaging/test_man.sh
