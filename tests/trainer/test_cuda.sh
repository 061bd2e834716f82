#!/bin/bash
# The CUDA table against the CPU table: build/tests/trainer/cuda_check compares every kernel, the layers'
# forward and backward passes, all gradients of the model, one full training step and the GPU
# augmentation (cuda_check.c says how), and the name cifar-train prints for a GPU (its UUID must be one of
# nvidia-smi -L's), then runs again (smaller) under compute-sanitizer's memcheck (with
# leak check and API errors reported), racecheck, initcheck and synccheck where compute-sanitizer is
# installed.
# SKIP only where the machine has no GPU (tests/gpu-env.sh); with a GPU, a build without CUDA or any CUDA
# error is a failure.
set -eu
cd "$(dirname "$0")/../.."
. tests/gpu-env.sh
BUILD=${BUILD:-build}
check=$BUILD/tests/trainer/cuda_check
log=$(mktemp "${TMPDIR:-/tmp}/cuda-check.XXXXXX")
trap 'rm -f "$log"' EXIT
if gpu_absent; then
    echo "SKIP(gpu): no /dev/nvidia* and no GPU in nvidia-smi -L"
    exit 77
fi
[ -x "$check" ] || { echo "FAIL: a GPU is here ($(gpu_seen)) but $check was not built (no nvcc or cuBLAS at build time)"; exit 1; }
"$check" | tee "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
# The UUID cifar-train prints for a rank's GPU is the driver's (nvidia-smi -L), where nvidia-smi is installed.
uuid=$(sed -n 's/^describe: device 0: .*, \(GPU-[0-9a-f-]*\), PCI .*/\1/p' "$log")
if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L | grep -qF "UUID: $uuid)" || { echo "FAIL: device 0 is named '$uuid', not a GPU of nvidia-smi -L:"; nvidia-smi -L; exit 1; }
    echo "ok: $uuid is in nvidia-smi -L"
fi
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")}
if [ ! -x "$sanitizer" ]; then
    echo "note: $sanitizer not installed: device memory accesses not checked"
    exit 0
fi
for tool in memcheck racecheck initcheck synccheck; do
    extra=()
    [ $tool = memcheck ] && extra=(--leak-check full --report-api-errors explicit)
    echo "== compute-sanitizer --tool $tool ${extra[*]}"
    "$sanitizer" --tool $tool "${extra[@]}" --error-exitcode 1 "$check" --small
done
