#!/bin/bash
# The CUDA table against the CPU table: build/tests/trainer/cuda_check compares every kernel, the layers'
# forward and backward passes, all gradients of the model and one full training step (cuda_check.c says
# how), then runs again (smaller) under compute-sanitizer's memcheck (with leak check), racecheck,
# initcheck and synccheck where compute-sanitizer is installed.
# SKIP where cifar-train was built without CUDA, or no GPU is visible (cuda_check says which).
set -eu
BUILD=${BUILD:-build}
check=$BUILD/tests/trainer/cuda_check
[ -x "$check" ] || { echo "SKIP(gpu): built without CUDA ($check missing: no nvcc or cuBLAS at build time)"; exit 77; }
rc=0
"$check" || rc=$?
[ $rc -eq 0 ] || exit $rc # 77 comes with cuda_check's "SKIP: no CUDA device (...)"
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")}
if [ ! -x "$sanitizer" ]; then
    echo "note: $sanitizer not installed: device memory accesses not checked"
    exit 0
fi
for tool in memcheck racecheck initcheck synccheck; do
    extra=()
    [ $tool = memcheck ] && extra=(--leak-check full)
    echo "== compute-sanitizer --tool $tool ${extra[*]}"
    "$sanitizer" --tool $tool "${extra[@]}" --error-exitcode 1 "$check" --small
done
