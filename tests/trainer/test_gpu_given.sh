#!/bin/bash
# No silent CPU fallback: cifar-train given a GPU it cannot use stops at start, exit 5, with one line on
# stderr naming the variables that gave it (CUDA_VISIBLE_DEVICES=..., SLURM_GPUS_ON_NODE=...,
# AZ_BATCHAI_NUM_GPUS=...) and why it cannot use one, and writes nothing: no model, no checkpoint, no
# training line. `--device cpu` with the same variables trains on the CPU. Runs on any machine: the GPU it
# cannot use is one past the GPUs there are (CUDA_VISIBLE_DEVICES=99: CUDA then shows none), a missing
# CUDA library (CIFAR_TRAIN_CUDA_LIBRARY), on a machine without a GPU any id at all, and on one with a GPU
# a missing NCCL backend (COLL_NCCL_LIBRARY); two ranks under mpirun both stop.
set -eu
. tests/trainer/trainer-env.sh
. tests/gpu-env.sh
need_cifar_train
need_data
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-gpu-given.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
run=(--data "$data" --limit-train 32 --limit-test 32 --epochs 1 --threads 1)
unset CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL SLURM_STEP_GPUS SLURM_JOB_GPUS SLURM_GPUS_ON_NODE AZ_BATCHAI_NUM_GPUS

# refused NAME VAR=VALUE... -- WHY: run in a fresh directory with the variables; exit 5, and the one
# stderr line names every VAR=VALUE given and WHY, and nothing was trained or written.
refused() {
    local name=$1 vars=() d=$work/$1 rc=0
    shift
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    local why=$2
    mkdir "$d"
    (cd "$d" && env "${vars[@]}" "$bin" "${run[@]}" --dir . >out 2>err) || rc=$?
    [ $rc -eq 5 ] || { echo "FAIL: $name: exit $rc, want 5"; cat "$d/out" "$d/err"; exit 1; }
    local said
    said=$(IFS=,; echo "${vars[*]}" | sed 's/,/, /g; s/\(CIFAR_TRAIN_CUDA\|COLL_NCCL\)_LIBRARY=[^,]*\(, \)\{0,1\}//')
    grep -qF "cifar-train: this process was given a GPU ($said) but cannot use it: " "$d/err" ||
        { echo "FAIL: $name: stderr does not name the GPU given ($said):"; cat "$d/err"; exit 1; }
    grep -qF -- "$why" "$d/err" || { echo "FAIL: $name: stderr does not say why ('$why'):"; cat "$d/err"; exit 1; }
    grep -qF "stopping instead of training on the CPU" "$d/err" ||
        { echo "FAIL: $name: stderr does not say it stops:"; cat "$d/err"; exit 1; }
    [ "$(wc -l <"$d/err")" -eq 1 ] || { echo "FAIL: $name: more than one line on stderr:"; cat "$d/err"; exit 1; }
    [ ! -s "$d/out" ] || { echo "FAIL: $name: it printed (trained?):"; cat "$d/out"; exit 1; }
    [ -z "$(ls -A "$d" | grep -v '^out$\|^err$')" ] ||
        { echo "FAIL: $name: it wrote files:"; ls -lA "$d"; exit 1; }
    echo "ok: $name: $(cat "$d/err")"
}

# A GPU id CUDA cannot find, on any machine.
refused past-the-gpus CUDA_VISIBLE_DEVICES=99 -- "no CUDA device ("
refused past-the-gpus-slurm CUDA_VISIBLE_DEVICES=99 SLURM_STEP_GPUS=99 SLURM_GPUS_ON_NODE=1 -- "no CUDA device ("
# The CUDA library missing (a node installed without it), whatever the node has.
refused no-library CIFAR_TRAIN_CUDA_LIBRARY=$work/none.so SLURM_GPUS_ON_NODE=1 -- "$work/none.so: "
refused no-library-batchai CIFAR_TRAIN_CUDA_LIBRARY=$work/none.so AZ_BATCHAI_NUM_GPUS=1 -- "$work/none.so: "
if ! gpu_absent; then
    # A GPU is here but libcollective's NCCL backend is not: no fallback to the CPU either.
    refused no-nccl COLL_NCCL_LIBRARY=$work/none.so CUDA_VISIBLE_DEVICES=0 -- "NCCL backend cannot be loaded"
else
    # No driver, no device: the GPU Slurm would name.
    refused no-gpu CUDA_VISIBLE_DEVICES=0 -- "no CUDA device ("
    refused no-gpu-slurm SLURM_GPUS_ON_NODE=1 -- "no CUDA device ("
    refused no-gpu-batchai AZ_BATCHAI_NUM_GPUS=1 -- "no CUDA device ("
fi

# Two ranks given a GPU each that they cannot use: both stop, mpirun passes on 5.
if command -v mpirun >/dev/null; then
    mkdir "$work/mpi"
    rc=0
    (cd "$work/mpi" && CUDA_VISIBLE_DEVICES=99 OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader} \
        mpirun --allow-run-as-root --oversubscribe -x CUDA_VISIBLE_DEVICES -np 2 "$bin" "${run[@]}" --dir . >out 2>err) ||
        rc=$?
    n=$(grep -c "this process was given a GPU (CUDA_VISIBLE_DEVICES=99) but cannot use it" "$work/mpi/err" || true)
    [ $rc -eq 5 ] && [ "$n" -ge 1 ] && [ ! -e "$work/mpi/saved_models" ] ||
        { echo "FAIL: mpirun -np 2: exit $rc (want 5), $n ranks said so, or it wrote a model"; cat "$work/mpi/err"; exit 1; }
    echo "ok: mpirun -np 2: exit 5, $n rank(s) said why before mpirun stopped the job"
fi

# The same variables with --device cpu: trained on the CPU, as asked.
mkdir "$work/cpu"
(cd "$work/cpu" && CUDA_VISIBLE_DEVICES=99 SLURM_GPUS_ON_NODE=1 AZ_BATCHAI_NUM_GPUS=1 \
    "$bin" "${run[@]}" --device cpu --dir . >out 2>err) ||
    { echo "FAIL: --device cpu with a GPU given exited $?"; cat "$work/cpu/err"; exit 1; }
[ -f "$work/cpu/saved_models/keras_cifar10_trained_model.h5" ] && grep -q '^Test accuracy' "$work/cpu/out" ||
    { echo "FAIL: --device cpu with a GPU given did not train"; cat "$work/cpu/out" "$work/cpu/err"; exit 1; }
echo "ok: --device cpu with CUDA_VISIBLE_DEVICES=99 SLURM_GPUS_ON_NODE=1 AZ_BATCHAI_NUM_GPUS=1: $(grep '^Test accuracy' "$work/cpu/out")"
