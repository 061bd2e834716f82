#!/bin/bash
# `make bench-accuracy-fp16` (not part of `make check`: 2 x SEEDS full runs, root): the tutorial's recipe to
# the end at 2 hosts x 1 rank (contrib/localcluster/hostnet, through tests/collective/mpirun-hosts.sh), with
# the gradients crossing hosts as float32 and as float16 (cifar-train --compress fp16), per seed, then the
# final test accuracy of each and the means.
#   SEEDS (default "0 1"), DATA (default ../shared/data/cifar-10-batches-bin-subset), EPOCHS (default:
#   cifar-train's, ceil(100/world)), RATE (the link, default 10gbit).
# One run at a time, fp32 then fp16 for each seed, so the two never share the machine.
set -eu
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
SEEDS=${SEEDS:-0 1}
RATE=${RATE:-10gbit}
[ -f "$DATA/data_batch_1.bin" ] || { echo "accuracy-fp16: $DATA not present, nothing measured"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "accuracy-fp16: needs root (it makes the hosts' namespaces), nothing measured"; exit 0; }
command -v mpirun >/dev/null || { echo "accuracy-fp16: no mpirun, nothing measured"; exit 0; }
top=$(pwd -P)
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
data=$(cd "$DATA" && pwd -P)
hosts=$top/tests/collective/mpirun-hosts.sh
export MPIRUN_HOSTS_TIMEOUT=0 # full runs: as long as they take
set_name=acc$$
# The ranks' files live where every host sees them (the nodes' /tmp is their own).
work=$(mktemp -d /var/tmp/accuracy-fp16.XXXXXX)
trap '"$hosts" down "$set_name" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "2 hosts x 1 rank, 1 thread each, link $RATE (tbf), seeds $SEEDS, data $DATA${EPOCHS:+, $EPOCHS epochs}"
"$hosts" up "$set_name" 2 --rate "$RATE" >/dev/null
results=()
for seed in $SEEDS; do
    for c in none fp16; do
        d=$work/s$seed-$c
        mkdir -p "$d"
        start=$(date +%s)
        (cd "$d" && "$hosts" run "$set_name" 1 --bind-to core "$BUILD/bin/cifar-train" --threads 1 --seed "$seed" \
            --compress "$c" --data "$data" --dir "$d" ${EPOCHS:+--epochs "$EPOCHS"}) >"$d/out.txt" 2>&1 ||
            { tail -n 20 "$d/out.txt"; echo "accuracy-fp16: seed $seed --compress $c failed"; exit 1; }
        acc=$(sed -n 's/^Test accuracy: *//p' "$d/out.txt" | tail -n 1)
        echo "seed $seed  --compress $c  test accuracy $acc  wall $(($(date +%s) - start)) s  load $(cut -d' ' -f1 /proc/loadavg)"
        results+=("$c $acc")
    done
done
printf '%s\n' "${results[@]}" | awk '{ s[$1] += $2; n[$1]++ }
    END { printf "mean test accuracy: fp32 %.4f, fp16 %.4f, fp16 - fp32 %+.2f points\n",
          s["none"] / n["none"], s["fp16"] / n["fp16"], 100 * (s["fp16"] / n["fp16"] - s["none"] / n["none"]) }'
