#!/usr/bin/env bash
# The NCCL backend on a GPU: coll-bench on device buffers validates every element (#wrong must be 0) for
# float32/float16/bfloat16, sum and average, one tensor per call and 7 fused tensors (device fusion buffer).
# One rank per GPU (NCCL refuses two ranks on one device), so it uses as many ranks as there are GPUs, up
# to 4. Without a GPU (or without the NCCL plugin) it is skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
bench=$BUILD/bin/coll-bench
[ -x "$bench" ] || { echo "SKIP(dep): $bench not built (no MPI)"; exit 77; }
[ -f "$BUILD/lib/libcollective_nccl.so" ] || { echo "SKIP(gpu): NCCL backend not built (no CUDA/NCCL here)"; exit 77; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -gt 0 ] || { echo "SKIP(gpu): no CUDA device"; exit 77; }
np=$((gpus < 4 ? gpus : 4))
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
