#!/bin/bash
# cifar-train --device cuda end to end on the real CIFAR-10 subset: a short GPU run and the same run on the
# CPU write the same Keras files (h5py: the same datasets with the same shapes and dtypes, the same
# attributes, the same model_config), with finite weights; `cifar-train evaluate` of the GPU model agrees
# with the run's own last line on the GPU and within two images on the CPU; one epoch under
# compute-sanitizer memcheck where it is installed; with two GPUs or more, a 2-rank run over NCCL. Each
# rank must name its GPU (ordinal, UUID, PCI bus id; the two NCCL ranks different ones), and a process
# given CUDA_VISIBLE_DEVICES=0 with no --device trains on it.
# Where the machine has no GPU (tests/gpu-env.sh) it checks that --device cuda fails cleanly ("no CUDA
# device", exit 5), then SKIPs; where it has one, every failure fails (a GPU the runtime cannot use too).
# A single process opens no NCCL communicator, so the memcheck epoch must report no CUDA API error at all.
set -eu
cd "$(dirname "$0")/../.."
. tests/gpu-env.sh
. tests/trainer/trainer-env.sh
need_data
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-cuda.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
common=(--data "$data" --limit-train 96 --limit-test 64 --threads 2 --seed 3 --epochs 2)
mkdir "$work/gpu" "$work/cpu" "$work/san" "$work/nccl" # --checkpoint-dir must exist

rc=0
(cd "$work" && "$bin" "${common[@]}" --device cuda --dir gpu --checkpoint-dir gpu >gpu.log 2>gpu.err) || rc=$?
if gpu_absent; then
    [ $rc -eq 5 ] && grep -q 'no CUDA device' "$work/gpu.err" ||
        { echo "FAIL: --device cuda without a GPU exited $rc, not 5 with 'no CUDA device'"; cat "$work/gpu.err"; exit 1; }
    [ "$(wc -l <"$work/gpu.err")" -eq 1 ] && [ ! -s "$work/gpu.log" ] ||
        { echo "FAIL: --device cuda without a GPU said more than its one error line"; cat "$work/gpu.log" "$work/gpu.err"; exit 1; }
    echo "without a GPU, --device cuda fails cleanly: $(cat "$work/gpu.err")"
    echo "SKIP(gpu): no CUDA device ($(sed -n 's/.*no CUDA device (\(.*\))$/\1/p' "$work/gpu.err"))"
    exit 77
fi
need_python h5py numpy
[ $rc -eq 0 ] || { echo "FAIL: a GPU is here ($(gpu_seen)) but cifar-train --device cuda exited $rc"; cat "$work/gpu.log" "$work/gpu.err"; exit 1; }
# The rank says which GPU it took: ordinal, model, UUID, PCI bus id.
grep -qE '^cifar-train: rank 0 of 1: GPU 0 \(.*, GPU-[0-9a-f-]{36}, PCI [0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9]\)$' "$work/gpu.err" ||
    { echo "FAIL: --device cuda did not name its GPU (rank, ordinal, UUID, PCI bus id) on stderr:"; cat "$work/gpu.err"; exit 1; }
grep '^cifar-train: rank' "$work/gpu.err"
# Given GPU 0 the way Slurm gives it, with no --device: it trains there and says so.
mkdir "$work/given"
(cd "$work/given" && CUDA_VISIBLE_DEVICES=0 SLURM_GPUS_ON_NODE=1 "$bin" --data "$data" --limit-train 32 --limit-test 32 \
    --epochs 1 --dir . >out 2>err) || { echo "FAIL: given CUDA_VISIBLE_DEVICES=0 it exited $?"; cat "$work/given/err"; exit 1; }
grep -q '^cifar-train: rank 0 of 1: GPU 0 of CUDA_VISIBLE_DEVICES=0 (.*GPU-' "$work/given/err" ||
    { echo "FAIL: given CUDA_VISIBLE_DEVICES=0, it did not say it uses that GPU:"; cat "$work/given/err"; exit 1; }
(cd "$work" && "$bin" "${common[@]}" --device cpu --dir cpu --checkpoint-dir cpu >cpu.log)
cat "$work/gpu.log"
"${PYTHON:-/usr/bin/python3}" - "$work/cpu" "$work/gpu" <<'PY'
import sys, h5py, numpy as np
def layout(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            attrs = sorted(obj.attrs.keys())
            if isinstance(obj, h5py.Dataset):
                out[name] = ("dataset", obj.shape, str(obj.dtype), attrs)
                if obj.dtype.kind == "f" and not np.all(np.isfinite(obj[()])):
                    sys.exit("FAIL: %s: %s has non-finite values" % (path, name))
            else:
                out[name] = ("group", attrs)
        f.visititems(visit)
        out["/"] = ("root", sorted(f.attrs.keys()), f.attrs.get("model_config"))
    return out
for name in ("saved_models/keras_cifar10_trained_model.h5", "checkpoint-1.h5", "checkpoint-2.h5"):
    c, g = layout(sys.argv[1] + "/" + name), layout(sys.argv[2] + "/" + name)
    if c != g:
        diff = sorted(k for k in set(c) | set(g) if c.get(k) != g.get(k))
        sys.exit("FAIL: %s differs between the CPU and GPU runs at %s" % (name, diff[:5]))
    print("%s: same layout on CPU and GPU (%d objects)" % (name, len(c)))
PY
model=$work/gpu/saved_models/keras_cifar10_trained_model.h5
"$bin" evaluate "$model" --data "$data" --limit-test 64 --device cuda >"$work/eval-gpu"
"$bin" evaluate "$model" --data "$data" --limit-test 64 --device cpu --threads 2 >"$work/eval-cpu"
want=$(grep '^Test accuracy' "$work/gpu.log")
grep -qx "$want" "$work/eval-gpu" || { echo "FAIL: GPU evaluate disagrees with the run's '$want'"; cat "$work/eval-gpu"; exit 1; }
"${PYTHON:-/usr/bin/python3}" - "$work/eval-gpu" "$work/eval-cpu" <<'PY'
import sys
acc = [float(open(p).read().split("Test accuracy:")[1].split()[0]) for p in sys.argv[1:]]
if abs(acc[0] - acc[1]) > 2 / 64 + 1e-9:
    sys.exit("FAIL: the GPU model scores %g on the GPU but %g on the CPU" % tuple(acc))
print("evaluate: GPU %g, CPU %g" % tuple(acc))
PY

sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")}
if [ -x "$sanitizer" ]; then
    echo "== compute-sanitizer memcheck: one epoch of 64 images"
    (cd "$work" && "$sanitizer" --tool memcheck --leak-check full --report-api-errors explicit --error-exitcode 1 \
        "$bin" --data "$data" --limit-train 64 --limit-test 32 --epochs 1 --device cuda --dir san --checkpoint-dir san)
else
    echo "note: $sanitizer not installed: device memory accesses not checked"
fi

gpus=$("$bin" --version | sed -n 's/^cuda: \([0-9]*\) device.*/\1/p')
if [ "${gpus:-0}" -ge 2 ]; then
    echo "== 2 ranks over NCCL (mpirun -np 2 --device cuda)"
    (cd "$work" && OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader} mpirun --allow-run-as-root --oversubscribe -np 2 \
        "$bin" "${common[@]}" --device cuda --dir nccl --checkpoint-dir nccl >nccl.log 2>nccl.err) ||
        { echo "FAIL: the 2-rank NCCL run exited $?"; cat "$work/nccl.err"; exit 1; }
    grep '^Test accuracy' "$work/nccl.log"
    # Each rank on its own GPU: two lines, two PCI bus ids.
    n=$(sed -n 's/^cifar-train: rank [01] of 2: GPU [0-9]* (.*, PCI \(.*\))$/\1/p' "$work/nccl.err" | sort -u | wc -l)
    [ "$n" -eq 2 ] || { echo "FAIL: 2 ranks did not name 2 different GPUs:"; cat "$work/nccl.err"; exit 1; }
    grep '^cifar-train: rank' "$work/nccl.err"
    [ -f "$work/nccl/saved_models/keras_cifar10_trained_model.h5" ] || { echo "FAIL: 2-rank run wrote no model"; exit 1; }
else
    echo "note: ${gpus:-0} GPU(s): the 2-rank NCCL run needs two"
fi
