#!/bin/bash
# `make bench` for the trainer: training images/s (batch 32, order + augmentation + step) and inference
# images/s of cifar-train's compute (build/bin/trainer-bench) next to the PyTorch peer (trainer/bench/torch_peer.py)
# on the real CIFAR-10 subset, with 1 and 2 threads, in the same run.
# Machines running other jobs make single measurements swing by 2x, so ours and PyTorch's alternate,
# ROUNDS times (default 3), SECONDS_EACH seconds of training each (default 10; inference half of that),
# and the summary gives the median of each column and the ratio of the medians.
set -eu
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
SECONDS_EACH=${SECONDS_EACH:-10}
ROUNDS=${ROUNDS:-3}
[ -f "$DATA/data_batch_1.bin" ] || { echo "trainer-bench: $DATA not present, nothing measured"; exit 0; }
have_torch=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || have_torch=0
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}; $ROUNDS rounds of ${SECONDS_EACH} s, ours and PyTorch alternating"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Both sides get the same threads, set explicitly: OpenMP's pool (ours, oneDNN, torch), and OpenBLAS kept to
# one thread (its own pthreads pool would spin beside torch's OpenMP threads). The peer prints its build
# and threading configuration once.
[ $have_torch = 1 ] && PEER_CONFIG=1 OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 trainer/bench/torch_peer.py \
    bench "$DATA" 2 32 1 | grep '^#' | grep -E 'PyTorch version|OpenMP|MKL|oneDNN|ATen parallel|threads|CPU capability'
for r in $(seq "$ROUNDS"); do
    for t in 1 2; do
        OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=1 "$BUILD/bin/trainer-bench" "$DATA" "$t" 32 "$SECONDS_EACH" | tee -a "$log"
        [ $have_torch = 1 ] && OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=1 /usr/bin/python3 trainer/bench/torch_peer.py \
            bench "$DATA" "$t" 32 "$SECONDS_EACH" | tee -a "$log"
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# Lines look like "ours train     threads=1 batch=32:   623.1 img/s (...)".
awk '{ sub("threads=", "", $3); v[$1 " " $2 " " $3] = v[$1 " " $2 " " $3] " " $5 }
function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
    printf "\nmedian img/s, batch 32   | ours 1 thr | torch 1 thr | ratio | ours 2 thr | torch 2 thr | ratio\n"
    split("train inference", kinds, " ")
    for (k = 1; k <= 2; k++) {
        line = sprintf("%-24s", kinds[k])
        for (t = 1; t <= 2; t++) {
            o = median(v["ours " kinds[k] " " t]); p = median(v["torch " kinds[k] " " t])
            line = line sprintf(" | %10.1f | %11s | %5s", o, p == "" ? "-" : sprintf("%.1f", p),
                                p == "" ? "-" : sprintf("%.2f", o / p))
        }
        print line
    }
    t1 = median(v["torch train 1"]); t2 = median(v["torch train 2"])
    o1 = median(v["ours train 1"]); o2 = median(v["ours train 2"])
    if (t1 != "" && t2 != "")
        printf "scaling 1 -> 2 threads, train: ours %.2fx, torch %.2fx%s\n", o2 / o1, t2 / t1,
               t2 / t1 < 1.2 ? " (the peer gains little from a second thread on this machine)" : ""
}' "$log"
[ $have_torch = 1 ] || echo "(python3-torch not installed: no PyTorch figures)"
