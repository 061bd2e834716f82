#!/usr/bin/env bash
# The NCCL backend on a GPU: coll-bench on device buffers validates every element (#wrong must be 0) for
# float32/float16/bfloat16, sum and average, one tensor per call and 7 fused tensors (device fusion buffer).
# One rank per GPU (NCCL refuses two ranks on one device), so it uses as many ranks as there are GPUs, up
# to 4; a single rank runs without any NCCL communicator (nccl_plugin.h) and must give the same results.
# Skipped only where the machine has no GPU (tests/gpu-env.sh) or no MPI; with a GPU, a missing plugin or
# any CUDA/NCCL failure fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
. tests/gpu-env.sh
bench=$BUILD/bin/coll-bench
gpu_absent && { echo "SKIP(gpu): no /dev/nvidia* and no GPU in nvidia-smi -L"; exit 77; }
[ -x "$bench" ] || { echo "SKIP(dep): $bench not built (no MPI)"; exit 77; }
[ -f "$BUILD/lib/libcollective_nccl.so" ] || { echo "FAIL: a GPU is here ($(gpu_seen)) but the NCCL backend was not built"; exit 1; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -gt 0 ] || { echo "FAIL: device nodes ($(gpu_seen)) but nvidia-smi -L lists no GPU"; exit 1; }
np=$((gpus < 4 ? gpus : 4))
# One process without a launcher: the inline path, no communicator (the trainer's single-GPU case).
for inplace_check in float:sum half:avg; do
    echo "== 1 process, no launcher, ${inplace_check%%:*} ${inplace_check#*:}"
    "$bench" --mem device -d "${inplace_check%%:*}" -o "${inplace_check#*:}" -b 8 -e 1M -f 8 -n 3 -w 1 -c 1
    "$bench" --mem device -d "${inplace_check%%:*}" -o "${inplace_check#*:}" --fused 7 -b 8K -e 1M -f 8 -n 3 -w 1 -c 1
done
# Small sizes keep it quick; the plugin sits next to coll-bench's ../lib.
for type in float half bfloat16; do
    for op in sum avg; do
        for fused in 1 7; do
            echo "== $np rank(s), $type $op, --fused $fused"
            "${MPIRUN[@]}" -np "$np" "$bench" --mem device -d "$type" -o "$op" --fused "$fused" \
                -b 0 -e 4M -f 8 -n 3 -w 1 -c 1
        done
    done
done
