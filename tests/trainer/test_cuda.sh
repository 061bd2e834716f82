#!/bin/bash
# The CUDA table against the CPU table: build/tests/trainer/cuda_check compares every kernel, the layers'
# forward and backward passes, all gradients of the model, one full training step and the GPU
# augmentation (cuda_check.c says how), then runs again (smaller) under compute-sanitizer's memcheck (with
# leak check and API errors reported), racecheck, initcheck and synccheck where compute-sanitizer is
# installed.
# SKIP only where the machine has no GPU (tests/gpu-env.sh); with a GPU, a build without CUDA or any CUDA
# error is a failure.
set -eu
cd "$(dirname "$0")/../.."
. tests/gpu-env.sh
BUILD=${BUILD:-build}
check=$BUILD/tests/trainer/cuda_check
if gpu_absent; then
    echo "SKIP(gpu): no /dev/nvidia* and no GPU in nvidia-smi -L"
    exit 77
fi
[ -x "$check" ] || { echo "FAIL: a GPU is here ($(gpu_seen)) but $check was not built (no nvcc or cuBLAS at build time)"; exit 1; }
"$check"
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
