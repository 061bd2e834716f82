#!/bin/bash
# cifar-train on ranks spread over hosts that are separate network hosts (contrib/localcluster/hostnet,
# tests/collective/mpirun-hosts.sh), one short recipe (seed 3, 256 images, one epoch), models compared
# bit for bit with h5py (h5_same.py). What it pins (libcollective/README.md, "Across hosts"):
#  - 2 ranks, one thread each: one host (node-shared memory) = 2 hosts x 1 rank (MPI over TCP), bit for bit;
#  - the thread count per rank changes the model (one process, --threads 1 against 2): the reason srun on
#    the local cluster (no binding: each rank's default is both CPUs) gave another model than mpirun -np 2
#    (a core per rank: one thread);
#  - 4 ranks: one host = 2 hosts x 2 flat (COLL_HIERARCHICAL=0), bit for bit; hierarchical (the default
#    there) adds each host's pair first, so its model differs;
#  - --compress fp16 across hosts trains and gives another model; a NaN loss on rank 1 still stops both
#    ranks with status 4.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
need_python h5py numpy
command -v mpirun >/dev/null || { echo "SKIP(dep): mpirun not installed"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP(root): separate network hosts need root (namespaces)"; exit 77; }
if ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then echo "SKIP(dep): ip and nsenter are needed"; exit 77; fi
export ASAN_OPTIONS=detect_leaks=0 OMPI_MCA_mpi_yield_when_idle=1
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)
hosts=$(pwd)/tests/collective/mpirun-hosts.sh
same=$(pwd)/tests/trainer/h5_same.py
# The nodes have a /tmp of their own: the runs write where every host sees them.
work=$(mktemp -d "$(cd "$BUILD" && pwd)/trainer-hosts.XXXXXX")
set=th$$
trap '"$hosts" down "$set"; rm -rf "$work"' EXIT
"$hosts" up "$set" 2
cd "$work"
recipe=(--device cpu --data "$data" --epochs 1 --limit-train 256 --limit-test 64 --seed 3 --log-every 0)
one_host=(env "OMPI_MCA_btl=self,vader" mpirun --allow-run-as-root --oversubscribe --bind-to none)
# run NAME [LAUNCHER...] -- OPTIONS...: the recipe with OPTIONS under LAUNCHER into NAME/, output in NAME.log
run() {
    local name=$1 launcher=()
    shift
    while [ "$1" != -- ]; do launcher+=("$1"); shift; done
    shift
    "${launcher[@]}" "$bin" "${recipe[@]}" "$@" --dir "$name" --checkpoint-dir "$name" >"$name.log" 2>&1 ||
        { cat "$name.log"; exit 1; }
}
identical() { /usr/bin/python3 "$same" "$1/checkpoint-1.h5" "$2/checkpoint-1.h5" || { echo "FAIL: $1 and $2 differ"; exit 1; }; }
differ() {
    ! /usr/bin/python3 "$same" "$1/checkpoint-1.h5" "$2/checkpoint-1.h5" ||
        { echo "FAIL: $1 and $2 are the same model: $3"; exit 1; }
}

echo "== 2 ranks x 1 thread: one host (node-shared memory) against 2 hosts x 1 rank (MPI over TCP)"
run one2 "${one_host[@]}" -np 2 -- --threads 1
run hosts2 "$hosts" run "$set" 1 -- --threads 1
identical one2 hosts2
echo "== one process, --threads 1 against --threads 2: the thread count changes the model"
run t1 -- --threads 1
run t2 -- --threads 2
differ t1 t2 "the model no longer depends on the thread count: update libcollective/README.md (Across hosts)"
echo "== 4 ranks: one host, 2 hosts x 2 flat (COLL_HIERARCHICAL=0), 2 hosts x 2 hierarchical"
run one4 "${one_host[@]}" -np 4 -- --threads 1
COLL_HIERARCHICAL=0 run flat4 "$hosts" run "$set" 2 --oversubscribe -- --threads 1
run hier4 "$hosts" run "$set" 2 --oversubscribe -- --threads 1
identical one4 flat4
differ one4 hier4 "the hierarchical order (host pairs first) should show in the model's last bits"
echo "== --compress fp16, 2 hosts x 1 rank: trains, another model than float32"
run fp16 "$hosts" run "$set" 1 -- --threads 1 --compress fp16
grep -q '^Test accuracy: ' fp16.log || { cat fp16.log; echo "FAIL: no test accuracy"; exit 1; }
differ hosts2 fp16 "float16 on the wire should round the gradients"

echo "== a NaN loss on rank 1 of 2 hosts, gradients in float16: both stop after that step, status 4"
"$bin" --device cpu --data "$data" --dir nan0 --checkpoint-dir nan0 --epochs 1 --limit-train 64 --limit-test 32 \
    --threads 1 --seed 5 >nan0.log 2>&1 || { cat nan0.log; exit 1; }
/usr/bin/python3 "$OLDPWD/tests/trainer/nan_on_rank.py" nan0/checkpoint-1.h5
rc=0
"$hosts" run "$set" 1 --tag-output "$bin" --device cpu --data "$data" --dir nan --checkpoint-dir nan --epochs 2 \
    --limit-train 64 --limit-test 32 --threads 1 --batch-size 1 --compress fp16 --resume nan0/checkpoint-1.h5 \
    >nan.log 2>&1 || rc=$?
[ "$rc" = 4 ] || { echo "FAIL: exit status $rc with a NaN loss on rank 1, expected 4"; cat nan.log; exit 1; }
grep -Eq "^\[1,1\]<stderr>:cifar-train: a rank's epoch 2, step 1/64: the loss is -?nan: training stopped" nan.log ||
    { echo "FAIL: expected rank 1 to name its loss at epoch 2, step 1"; cat nan.log; exit 1; }
! ls nan/checkpoint-* nan/saved_models/*.h5 2>/dev/null || { echo "FAIL: something was saved"; exit 1; }
echo "PASS: test_hosts (trainer)"
