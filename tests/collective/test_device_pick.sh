#!/usr/bin/env bash
# coll_init's GPU choice on real ranks (one host), with the stand-in NCCL plugin (nccl_stub.c) reporting
# COLL_STUB_GPUS devices: as many ranks as GPUs take one each (local rank = ordinal); with one GPU per
# task (each rank sees one, CUDA_VISIBLE_DEVICES of its own) every rank takes 0; more ranks than the GPUs
# they all see are refused on every rank, naming two local ranks, before NCCL is asked.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/collective/mpi-env.sh
stub=$(cd "$BIN" && pwd -P)/nccl_stub.so
[ -f "$stub" ] || { echo "FAIL: $stub was not built"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
pick() { # pick NP GPUS [mpirun options...]: the sorted lines of test_device_pick
    local np=$1 gpus=$2
    shift 2
    COLL_NCCL_LIBRARY=$stub COLL_STUB_GPUS=$gpus "${MPIRUN[@]}" -np "$np" -x COLL_NCCL_LIBRARY -x COLL_STUB_GPUS "$@" \
        "$BIN/test_device_pick" | sort >"$out"
    cat "$out"
}
same() { # same TEXT: $out is exactly TEXT
    [ "$(cat "$out")" = "$1" ] || { echo "FAIL: expected:"; echo "$1"; exit 1; }
}

echo "== 3 ranks, 4 GPUs seen by each: the local rank's"
pick 3 4
same "rank 0 local 0 device 0
rank 1 local 1 device 1
rank 2 local 2 device 2"

echo "== 3 ranks, one GPU each (CUDA_VISIBLE_DEVICES=rank): every rank takes 0"
cat >"$out.sh" <<'SH'
#!/bin/sh
CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$@"
SH
chmod +x "$out.sh"
trap 'rm -f "$out" "$out.sh"' EXIT
COLL_NCCL_LIBRARY=$stub COLL_STUB_GPUS=1 "${MPIRUN[@]}" -np 3 -x COLL_NCCL_LIBRARY -x COLL_STUB_GPUS \
    "$out.sh" "$BIN/test_device_pick" | sort >"$out"
cat "$out"
same "rank 0 local 0 device 0
rank 1 local 1 device 0
rank 2 local 2 device 0"

echo "== 3 ranks, 2 GPUs seen by all: refused on every rank, naming local ranks 0 and 2"
pick 3 2
n=$(grep -c "^refused: libcollective: local ranks 0 and 2 would share GPU 0 of the 2 they see (the same CUDA_VISIBLE_DEVICES): ask Slurm for one GPU per task (--gpus-per-task=1), or run at most 2 ranks per node$" "$out" || true)
[ "$n" -eq 3 ] || { echo "FAIL: $n of 3 ranks refused with the message"; exit 1; }
echo "ok"
