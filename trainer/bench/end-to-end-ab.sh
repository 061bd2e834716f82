#!/bin/bash
# `make bench-ab OLD=REV`: cifar-train end to end, an older build against this one, alternating run by run
# on the CPU. It reports wall time and the epoch's own training time (--log-json), as medians. Use it after a
# change around the training step (the loop, the logs, the files, the start and the exit), which
# trainer-bench.sh does not time. The old side is REV built in a worktree under
# $BUILD/ab/, or OLD_BUILD, a build directory with bin/cifar-train.
# Both sides get CIFAR_TRAIN_CUDA_LIBRARY naming no file: neither may load CUDA. A third column runs this
# build with its CUDA library as installed.
# ROUNDS (default 7), TRAIN and TEST (images, default 3200 and 640), THREADS (default 2).
set -eu -o pipefail # a failed run inside the rounds' pipeline stops the script, not only its subshell
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
ROUNDS=${ROUNDS:-7} TRAIN=${TRAIN:-3200} TEST=${TEST:-640} THREADS=${THREADS:-2}
new=$BUILD
old=${OLD_BUILD:-}
if [ -z "$old" ]; then
    [ -n "${OLD:-}" ] || { echo "bench-ab: say OLD=REV (a commit to compare with) or OLD_BUILD=DIR" >&2; exit 2; }
    rev=$(git rev-parse --short "$OLD^{commit}") || { echo "bench-ab: OLD=$OLD is not a commit here" >&2; exit 2; }
    tree=$BUILD/ab/$rev
    [ -d "$tree" ] || { git worktree prune; git worktree add --detach "$tree" "$rev" >/dev/null; } # prune: a build/ removed since
    echo "bench-ab: building cifar-train of $rev in $tree"
    make -C "$tree" -s build/bin/cifar-train >/dev/null
    old=$tree/build
fi
for b in "$old" "$new"; do [ -x "$b/bin/cifar-train" ] || { echo "bench-ab: no $b/bin/cifar-train" >&2; exit 2; }; done
[ -d "$DATA" ] || { echo "bench-ab: no CIFAR-10 data at $DATA (DATA=...)" >&2; exit 2; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "old: $old ($(git -C "$(dirname "$old")" log --oneline -1 2>/dev/null | cut -c1-70))"
echo "new: $new ($(git log --oneline -1 | cut -c1-70))"
echo "run: cifar-train --device cpu --threads $THREADS --epochs 1 --limit-train $TRAIN --limit-test $TEST --csv --log-json; $ROUNDS rounds"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-ab.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for _ in $(seq "$ROUNDS"); do
    for side in old new new+cuda; do
        b=$new lib=$tmp/no-such-library.so
        case $side in old) b=$old ;; new+cuda) lib= ;; esac
        d=$tmp/$side
        rm -rf "$d" && mkdir -p "$d"
        s=$(date +%s%N)
        CIFAR_TRAIN_CUDA_LIBRARY=$lib OMP_NUM_THREADS=$THREADS "$b/bin/cifar-train" --data "$DATA" --device cpu \
            --threads "$THREADS" --epochs 1 --limit-train "$TRAIN" --limit-test "$TEST" --dir "$d" --checkpoint-dir "$d" \
            --log-json "$d/log.json" --csv "$d/training.csv" >"$d.out" 2>&1 || { echo "bench-ab: $side failed:" >&2; tail -n 5 "$d.out" >&2; exit 1; }
        echo "$side $(( ($(date +%s%N) - s) / 1000000 )) $(sed -n 's/.*"type": *"epoch".*"seconds": *\([0-9.]*\).*/\1/p' "$d/log.json" | tail -n 1)"
    done
done | tee "$tmp/rows" | awk '{ printf "round %d %-9s wall %5d ms\n", int((NR - 1) / 3) + 1, $1, $2 }'
# median COLUMN SIDE: the median of a column of the rows of SIDE.
median() { awk -v s="$2" -v c="$1" '$1 == s { print $c }' "$tmp/rows" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "medians (ms):"
for side in old new new+cuda; do
    printf '  %-9s wall %5d  training %5.0f\n' "$side" "$(median 2 "$side")" "$(awk -v x="$(median 3 "$side")" 'BEGIN { print x * 1000 }')"
done
