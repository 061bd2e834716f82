#!/bin/bash
# A signal mid-epoch, then `--resume auto`, gives the model of an uninterrupted run (compared with h5py,
# dataset by dataset, at a fixed thread count):
#  - 1 process, SIGTERM: exit 3, "SIGTERM: stopping after epoch 1, step S/N", checkpoint-1-step-S.h5;
#  - 2 MPI ranks, SIGUSR1 sent to rank 1 only: both ranks agree on the step, rank 0 names the signal that
#    only rank 1 took and writes the checkpoint;
#  - a second stop in the resumed run (SIGINT), so the job is stopped twice, still ends with the same model.
# Also: --resume auto with an empty checkpoint directory starts from the beginning, saying so.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
need_python h5py numpy
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-signal.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$(cd "$BUILD/bin" && pwd)/cifar-train
data=$(cd "$DATA" && pwd)

# start_and_signal DIR SIG WHO CMD...: runs CMD in DIR (stdout in DIR/log), waits until the log shows
# epoch 1 under way plus 0.3 s, sends SIG to WHO (main: the command; rank1: the MPI rank 1
# process), then returns the command's exit status in $rc.
start_and_signal() {
    local dir=$1 sig=$2 who=$3 pid target
    shift 3
    (cd "$dir" && exec "$@") >"$dir/log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q '^Epoch 1/' "$dir/log" 2>/dev/null && break; sleep 0.1; done
    sleep 0.3
    target=$pid
    if [ "$who" = rank1 ]; then
        for p in $(pgrep -P "$pid"); do
            tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && target=$p
        done
        [ "$target" != "$pid" ] || { echo "FAIL: rank 1 not found under mpirun"; kill "$pid"; exit 1; }
    fi
    kill -"$sig" "$target"
    rc=0
    wait "$pid" || rc=$?
}

# expect_stop DIR SIG: the run stopped mid-epoch with status 3 and said where.
expect_stop() {
    local dir=$1 sig=$2
    [ "$rc" = 3 ] || { echo "FAIL: exit status $rc after $sig, expected 3"; cat "$dir/log"; exit 1; }
    grep -Eq "^$sig: stopping after epoch [0-9]+, step [0-9]+/[0-9]+$" "$dir/log" ||
        { echo "FAIL: no stop message for $sig"; cat "$dir/log"; exit 1; }
    ls "$dir"/checkpoint-*-step-*.h5 >/dev/null 2>&1 || { echo "FAIL: no mid-epoch checkpoint"; ls "$dir"; exit 1; }
    grep -E "^$sig: stopping" "$dir/log"
}

one=(--device cpu --data "$data" --limit-train 2560 --limit-test 64 --threads 2 --seed 5 --epochs 2)
mkdir "$work/a" "$work/b"
(cd "$work/a" && "$bin" "${one[@]}" >log 2>&1) || { cat "$work/a/log"; exit 1; }
start_and_signal "$work/b" TERM main "$bin" "${one[@]}" --resume auto
grep -q '^No checkpoint in \.: starting from the beginning$' "$work/b/log" ||
    { echo "FAIL: --resume auto with no checkpoint did not say it starts afresh"; cat "$work/b/log"; exit 1; }
expect_stop "$work/b" SIGTERM
mv "$work/b/log" "$work/b/log.1"
start_and_signal "$work/b" INT main "$bin" "${one[@]}" --resume auto
grep '^Resuming from ./checkpoint-1-step-' "$work/b/log" || { echo "FAIL: not resumed"; cat "$work/b/log"; exit 1; }
[ "$rc" = 0 ] || expect_stop "$work/b" SIGINT # the second stop may land after the end on a fast machine
if [ "$rc" = 3 ]; then
    (cd "$work/b" && "$bin" "${one[@]}" --resume auto >log.3 2>&1) || { cat "$work/b/log.3"; exit 1; }
fi
/usr/bin/python3 tests/trainer/h5_same.py "$work/a/saved_models/keras_cifar10_trained_model.h5" \
    "$work/b/saved_models/keras_cifar10_trained_model.h5"

command -v mpirun >/dev/null || { echo "SKIP(dep): mpirun not installed (the 1-process part passed)"; exit 77; }
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp} OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)
two=(--device cpu --data "$data" --limit-train 2560 --limit-test 64 --threads 1 --seed 5 --epochs 2)
mkdir "$work/c" "$work/d"
(cd "$work/c" && "${mpi[@]}" "$bin" "${two[@]}" >log 2>&1) || { cat "$work/c/log"; exit 1; }
start_and_signal "$work/d" USR1 rank1 "${mpi[@]}" "$bin" "${two[@]}" --resume auto
expect_stop "$work/d" SIGUSR1
[ "$(ls "$work/d"/checkpoint-*-step-*.h5 | wc -l)" = 1 ] || { echo "FAIL: expected one mid-epoch checkpoint"; exit 1; }
(cd "$work/d" && "${mpi[@]}" "$bin" "${two[@]}" --resume auto >log.2 2>&1) || { cat "$work/d/log.2"; exit 1; }
/usr/bin/python3 tests/trainer/h5_same.py "$work/c/saved_models/keras_cifar10_trained_model.h5" \
    "$work/d/saved_models/keras_cifar10_trained_model.h5"
