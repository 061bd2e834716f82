#!/bin/sh
# Install the Debian packages slurm-batchai needs, idempotently: only what is missing is installed,
# and the script says what. Runs as root, or through sudo.
#   contrib/install-deps.sh            build + test dependencies
#   contrib/install-deps.sh bench      also the benchmark peers (PyTorch, hyperfine) and faketime
set -eu

build="build-essential pkg-config libcjson-dev libyaml-dev libseccomp-dev libhdf5-dev hdf5-tools libopenblas-dev libdnnl-dev
       openmpi-bin libopenmpi-dev libpmix-dev clang libclang-rt-dev xz-utils"
slurm="slurm-wlm slurmctld slurmd slurm-client libslurm-dev munge libmunge-dev"
# What configure of the Slurm releases in ../shared/vendor/slurm needs (contrib/slurm-build; make check runs
# the cluster suite on them too).
slurmsrc="libhwloc-dev libjson-c-dev libhttp-parser-dev libyaml-dev libdbus-1-dev liblz4-dev libreadline-dev
          libpam0g-dev libssl-dev libjwt-dev"
tests="python3 python3-h5py python3-numpy python3-jsonschema python3-yaml busybox-static runc sudo procps bc shellcheck
       python3-torch python3-mpi4py python3-scipy mandoc man-db rpm curl
       protobuf-compiler python3-protobuf python3-crc32c gnuplot-nox iproute2 util-linux
       gdb file" # gdb, file: tests/cluster/lib.sh's core_report
bench="python3-torch hyperfine faketime" # faketime: tests/trainer/same_output.sh, before and after a refactoring

want="$build $slurm $slurmsrc $tests"
for set in "$@"; do
    case $set in
    bench) want="$want $bench" ;;
    *) echo "install-deps: unknown set '$set' (known: bench)" >&2; exit 2 ;;
    esac
done

missing=""
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
echo "install-deps: installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
# Debian starts the daemons it installs; the project runs its own clusters, so stop the system ones.
for svc in slurmctld slurmd munge; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
        $SUDO systemctl stop "$svc" || true
    fi
done
