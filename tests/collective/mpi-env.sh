# Sourced by the tests/collective scripts: where the binaries are and how to start real ranks here.
BUILD=${BUILD:-build}
BIN=$BUILD/tests/collective
[ -x "$BIN/test_collective" ] ||
    { echo "SKIP(dep): libcollective's tests are not built (they need Open MPI: libopenmpi-dev)"; exit 77; }
# As root in a container: --allow-run-as-root; more ranks than the 2 cores: --oversubscribe, and
# yield when idle so oversubscribed ranks do not starve each other.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
export OMPI_MCA_mpi_yield_when_idle=1
# Open MPI keeps allocations until exit that LeakSanitizer would report; ASan/UBSan stay on.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
# The test binaries live outside build/lib, so point them at the NCCL plugin when it was built.
# (An if, not `[ ] &&`: as the last line of a file sourced under set -e, a false test would end the caller.)
if [ -f "$BUILD/lib/libcollective_nccl.so" ]; then
    COLL_NCCL_LIBRARY=$(cd "$BUILD/lib" && pwd -P)/libcollective_nccl.so
    export COLL_NCCL_LIBRARY
fi
