#!/bin/bash
# same_output.sh OLD_CIFAR_TRAIN NEW_CIFAR_TRAIN: for a change that must not change what cifar-train writes
# (a refactoring), runs both binaries alike under a frozen clock (faketime) and compares every file they
# write, byte for byte: checkpoints and the final model (Keras HDF5), --log-json, stdout, a resume, evaluate,
# and a SIGUSR1 pending from the start (a stop after step 1, checkpoint-1-step-1.h5, status 3) and its
# resume. Not part of make check (it needs two builds); exit 0 when every file is the same.
#   cp build/bin/cifar-train /tmp/cifar-train.old; <change>; make; tests/trainer/same_output.sh /tmp/cifar-train.old build/bin/cifar-train
set -eu
. tests/trainer/trainer-env.sh
need_data
command -v faketime >/dev/null || { echo "SKIP(dep): faketime is not installed (Debian: faketime)"; exit 77; }
[ $# = 2 ] || { echo "usage: $0 OLD_CIFAR_TRAIN NEW_CIFAR_TRAIN" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-same.XXXXXX")
trap 'rm -rf "$work"' EXIT
data=$(cd "$DATA" && pwd)
frozen=(faketime -f '2026-01-01 00:00:00')
common=(--device cpu --data "$data" --limit-train 96 --limit-test 48 --threads 2 --seed 7 --batch-size 16)

# run BIN DIR (in a subshell): every run, its files in DIR.
run() {
    local bin rc=0
    bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    mkdir -p "$2/s"
    cd "$2"
    "${frozen[@]}" "$bin" "${common[@]}" --epochs 2 --dir . --log-json log.json --log-every 2 >stdout 2>&1
    "${frozen[@]}" "$bin" "${common[@]}" --epochs 3 --dir r --resume checkpoint-2.h5 --log-json log2.json \
        --log-every 2 >stdout2 2>&1
    "${frozen[@]}" "$bin" evaluate saved_models/keras_cifar10_trained_model.h5 --data "$data" --limit-test 48 \
        --threads 2 >evaluate.out 2>&1
    cd s
    # A blocked signal stays pending across exec: cifar-train takes it at its first step boundary.
    "${frozen[@]}" perl -e 'use POSIX; sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGUSR1)); kill USR1 => $$; exec @ARGV' \
        "$bin" "${common[@]}" --epochs 2 --dir . --log-json log.json --log-every 1 >stdout 2>&1 || rc=$?
    echo "status $rc" >>stdout
    [ -f checkpoint-1-step-1.h5 ] || { echo "FAIL: $1 wrote no checkpoint-1-step-1.h5 on SIGUSR1"; cat stdout; exit 1; }
    "${frozen[@]}" "$bin" "${common[@]}" --epochs 2 --dir . --resume auto --log-json log.json --log-every 1 >stdout2 2>&1
}
(run "$1" "$work/old")
(run "$2" "$work/new")
old=$(cd "$work/old" && find . -type f | sort)
[ "$old" = "$(cd "$work/new" && find . -type f | sort)" ] || { echo "FAIL: the runs wrote different files"; exit 1; }
bad=0
for f in $old; do
    # The messages name the run's own folder (old/ or new/): the same once each names it alike.
    cmp -s "$work/old/$f" "$work/new/$f" ||
        cmp -s <(sed "s|$work/old/|RUN/|g" "$work/old/$f") <(sed "s|$work/new/|RUN/|g" "$work/new/$f") ||
        { echo "DIFFERS: $f"; bad=1; }
done
n=$(wc -w <<<"$old")
[ $bad = 0 ] || { echo "FAIL: $n files compared, some differ"; exit 1; }
echo "$n files byte-equal (Keras files, --log-json, stdout; train, resume, evaluate, a stop on SIGUSR1)"
