#!/bin/bash
# Data-parallel training with 2 real MPI ranks on this node:
#  - test_mpi_dist: broadcast, identical weights, equality with a 1-process average (see its header);
#  - the same with COLL_SHM=0 (each rank updates its own copy after an MPI allreduce), bit for bit;
#  - cifar-train -np 2 on a slice of the real subset: trains, only rank 0 prints and writes files; the same
#    with COLL_SHM=0 gives the same checkpoints bit for bit;
#  - a NaN loss on rank 1 alone (the ranks' stop votes ride in the step's gradient batch): both stop, status 4.
# ASan's leak check is off for the MPI programs: Open MPI keeps allocations until exit by design.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
command -v mpirun >/dev/null || { echo "SKIP(dep): mpirun not installed"; exit 77; }
need_data
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp} OMPI_MCA_rmaps_base_oversubscribe=1
export ASAN_OPTIONS=detect_leaks=0
mpi="mpirun --allow-run-as-root --oversubscribe -np 2"
$mpi "$BUILD/tests/trainer/test_mpi_dist"
COLL_SHM=0 $mpi "$BUILD/tests/trainer/test_mpi_dist"

work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-mpi.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
(cd "$work" && $mpi "$bin" --device cpu --data "$data" --dir out --epochs 2 --limit-train 96 --limit-test 64 --threads 1 \
    --log-json log.json) >"$work/stdout" 2>&1 || { cat "$work/stdout"; exit 1; }
cat "$work/stdout"
grep -c '^Epoch 1/2$' "$work/stdout" | grep -qx 1 || { echo "FAIL: expected exactly one 'Epoch 1/2' (rank 0 only)"; exit 1; }
grep -q '^Test accuracy: ' "$work/stdout"
for f in checkpoint-1.h5 checkpoint-2.h5 out/saved_models/keras_cifar10_trained_model.h5; do
    [ -s "$work/$f" ] || { echo "FAIL: $f missing"; exit 1; }
done
[ "$(wc -l <"$work/log.json")" -eq 2 ] || { echo "FAIL: expected 2 epoch lines in log.json"; exit 1; }
echo "2-rank cifar-train ok"

# On one host each rank updates its slice of the one node-shared copy of the parameters as its gradients are
# reduced (run/step_core.c); with COLL_SHM=0 each rank reduces through MPI and updates a copy of its own. The
# weights and RMSprop accumulators must be the same, bit for bit.
need_python h5py numpy
(cd "$work" && COLL_SHM=0 $mpi "$bin" --device cpu --data "$data" --dir private --checkpoint-dir private --epochs 2 \
    --limit-train 96 --limit-test 64 --threads 1) >"$work/private.log" 2>&1 || { cat "$work/private.log"; exit 1; }
for e in 1 2; do
    /usr/bin/python3 tests/trainer/h5_same.py "$work/checkpoint-$e.h5" "$work/private/checkpoint-$e.h5"
done
echo "sharded update in node-shared memory = each rank's own update after MPI, bit for bit"

# A non-finite loss on ONE rank of two (real ranks, a real NaN): both stop after that same step with status 4,
# only that rank names the loss, nothing is saved. The checkpoint is doctored (nan_on_rank.py) so that the
# first step resumed from it overflows on rank 1 alone, where its dropout keeps a poisoned unit.
(cd "$work" && "$bin" --device cpu --data "$data" --dir one --checkpoint-dir one --epochs 1 --limit-train 64 \
    --limit-test 32 --threads 1 --seed 5 >one.log 2>&1) || { cat "$work/one.log"; exit 1; }
/usr/bin/python3 tests/trainer/nan_on_rank.py "$work/one/checkpoint-1.h5"
rc=0
(cd "$work" && $mpi --tag-output "$bin" --device cpu --data "$data" --dir nan --checkpoint-dir nan --epochs 2 \
    --limit-train 64 --limit-test 32 --threads 1 --batch-size 1 --resume one/checkpoint-1.h5) >"$work/nan.log" 2>&1 || rc=$?
[ "$rc" = 4 ] || { echo "FAIL: exit status $rc with a NaN loss on rank 1, expected 4"; cat "$work/nan.log"; exit 1; }
grep 'the loss is' "$work/nan.log"
[ "$(grep -c 'the loss is' "$work/nan.log")" = 1 ] &&
    grep -Eq "^\[1,1\]<stderr>:cifar-train: a rank's epoch 2, step 1/64: the loss is -?nan: training stopped" "$work/nan.log" ||
    { echo "FAIL: expected rank 1 alone to name its loss at epoch 2, step 1"; cat "$work/nan.log"; exit 1; }
! ls "$work"/nan/checkpoint-* "$work"/nan/saved_models/*.h5 2>/dev/null || { echo "FAIL: something was saved"; exit 1; }
echo "a NaN loss on rank 1 stopped both ranks after the same step"
