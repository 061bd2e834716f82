#!/bin/bash
# `make bench-scaling`: data-parallel scaling of cifar-train next to PyTorch DDP over gloo
# (trainer/bench/torch_ddp.py: the same model, recipe, batch 32 per rank, threads per process, and the same
# timing: EPOCHS passes over the real CIFAR-10 subset, the first a warm-up, the last one timed).
# Configurations (the same launcher for both sides):
#   1p1t   one process, 1 thread (no launcher)          1p2t   one process, 2 threads
#   2r     mpirun -np 2 --bind-to core, 1 thread each   2r-slurm  srun --mpi=pmix -N 2 -n 2 on the local
#                                                                 2-node cluster (contrib/localcluster; root)
#   2x1p1t two independent 1p1t processes at once, one per core (taskset), no communication: the machine's
#          ceiling for 2 ranks (shared memory bandwidth, caches, clocks), which no data-parallel run can pass
#   2h-RATE  2 hosts x 1 rank: hosts n1 and n2 of a contrib/localcluster/hostnet set (own network, UTS and
#          mount namespaces, so libcollective and Open MPI see two hosts and reduce over TCP), each host's
#          link shaped to RATE (HOSTRATES, default 1gbit 10gbit 25gbit; root). mpirun runs in the set's ctl
#          and starts the ranks through trainer/bench/hostnet-rsh.sh; rank i is pinned to core i; DDP's
#          rendezvous is n1's address (MASTER_ADDR, GLOO_SOCKET_IFNAME=eth0). The kernel may have no netem,
#          so no delay is added: the link's latency is the veth pair's, printed with what TCP gets through
#          (trainer/bench/hostnet_link.py). Also measured per round: each side's allreduce of the model's
#          gradients alone on that link (coll-bench; torch_ddp.py ALLREDUCE_ONLY=1), from which the table
#          tells how much of it was hidden behind backward (1 - wait / allreduce alone).
#   2h16-RATE  the same with the gradients crossing as float16: cifar-train --compress fp16 (COLL_COMPRESS
#          for coll-bench), DDP's fp16_compress_hook (torch_ddp.py COMPRESS=fp16)
# CONFIGS picks configurations (default: all that can run here).
# For each: images/s per rank and in aggregate, end to end (the epoch: order, augmentation, steps) and step
# only (the summed step times), efficiency = aggregate(N) / (N x the same side's 1p1t), and for cifar-train
# per step: compute (step minus wait), the wait for the gradient allreduces after backward, and the CPU time
# of libcollective's threads (progress + watchdog), from its --log-json epoch line (the peer's wait is
# timed by a DDP comm hook, torch_ddp.py). ROUNDS (default 1) runs
# every configuration that many times, ours and the peer alternating, and reports the median (the machine
# may be shared: its load is printed with each round). BUILD may name another build (an absolute path) to
# measure an older cifar-train; PEER=0 leaves the peer out.
set -eu
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
ROUNDS=${ROUNDS:-1}
EPOCHS=${EPOCHS:-2}
[ -f "$DATA/data_batch_1.bin" ] || { echo "bench-scaling: $DATA not present, nothing measured"; exit 0; }
command -v mpirun >/dev/null || { echo "bench-scaling: no mpirun, nothing measured"; exit 0; }
TOP=$(pwd -P)
case $BUILD in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
bin=$BUILD/bin/cifar-train
data=$(cd "$DATA" && pwd -P)
have_torch=${PEER:-1} # PEER=0: cifar-train alone (a before/after comparison of ours)
[ "$have_torch" = 0 ] || /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || have_torch=0
# Not in /tmp: the hostnet hosts have a /tmp of their own.
work=$(mktemp -d /var/tmp/bench-scaling.XXXXXX)
mkdir "$work/run"
chmod 0755 "$work" "$work/run"
cluster=""
HOSTNET=$TOP/contrib/localcluster/hostnet
hostsets=()
cleanup() {
    [ -z "$cluster" ] || contrib/localcluster/localcluster stop "$cluster" >/dev/null 2>&1 || true
    for s in "${hostsets[@]}"; do "$HOSTNET" down "${s#*:}" || true; done
    rm -rf "$work" "$cluster"
}
trap cleanup EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cifar-train: --device cpu --epochs $EPOCHS --limit-test 64 (validation is outside the timed epoch), epoch $EPOCHS timed"
# Both sides: exactly the threads asked for (OpenMP, oneDNN, torch), OpenBLAS kept to one.
export OPENBLAS_NUM_THREADS=1 OMPI_MCA_btl=self,vader MASTER_ADDR=127.0.0.1 ALLREDUCE_ONLY=0 COMPRESS=none COLL_COMPRESS=none
MPIRUN=(mpirun --allow-run-as-root -np 2 --bind-to core -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS -x MASTER_ADDR -x MASTER_PORT)
[ $have_torch = 1 ] && PEER_CONFIG=1 OMP_NUM_THREADS=1 /usr/bin/python3 trainer/bench/torch_ddp.py "$data" 1 0 | grep '^#' |
    grep -E '^# torch|OpenMP|threads'

configs="1p1t 1p2t 2x1p1t 2r"
if [ "$(id -u)" -eq 0 ] && [ -x contrib/localcluster/localcluster ] && command -v slurmctld >/dev/null; then
    cluster=$(mktemp -d /tmp/bench-scaling-cluster.XXXXXX)
    if contrib/localcluster/localcluster start "$cluster" >/dev/null 2>&1; then
        configs="$configs 2r-slurm"
    else
        echo "bench-scaling: the local cluster did not start; 2r-slurm not measured"
    fi
else
    echo "bench-scaling: 2r-slurm needs root and contrib/localcluster (Slurm); not measured"
fi

# 2 hosts x 1 rank at each link rate: one hostnet set per rate, named bs<pid><i> (hostnet's 10 characters),
# kept as "RATE:SET" in hostsets.
HOSTRATES=${HOSTRATES-1gbit 10gbit 25gbit}
if [ -n "$HOSTRATES" ] && [ "$(id -u)" -eq 0 ] && command -v nsenter >/dev/null && command -v tc >/dev/null; then
    i=0
    for rate in $HOSTRATES; do
        set_name=bs$$$i
        i=$((i + 1))
        "$HOSTNET" up "$set_name" 2 --rate "$rate" >/dev/null || { echo "bench-scaling: hostnet up failed"; exit 1; }
        hostsets+=("$rate:$set_name")
        configs="$configs 2h-$rate 2h16-$rate"
        "$HOSTNET" exec "$set_name" n2 -- python3 "$TOP/trainer/bench/hostnet_link.py" serve 29500 &
        echo "link $rate (tc tbf on each host's eth0, no added delay: no netem here), n1 -> n2: " \
            "$("$HOSTNET" exec "$set_name" n1 -- python3 "$TOP/trainer/bench/hostnet_link.py" probe 198.18.0.12 29500)" \
            "; load $(cut -d' ' -f1-3 /proc/loadavg)"
        wait
    done
else
    echo "bench-scaling: 2h-* need root, nsenter and tc (contrib/localcluster/hostnet); not measured"
fi

# launch_hosts RATE: the 2-host launcher of that rate's set, in the array launch.
launch_hosts() {
    local s set_name=""
    for s in "${hostsets[@]}"; do [ "${s%%:*}" != "$1" ] || set_name=${s#*:}; done
    launch=(nsenter --net="/run/netns/$set_name-ctl" -- env HOSTNET_SET="$set_name" OMPI_MCA_btl=self,tcp
            mpirun --allow-run-as-root --mca plm_rsh_agent "$TOP/trainer/bench/hostnet-rsh.sh" --host n1,n2 -np 2
            --map-by node --bind-to none --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0
            -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS -x MASTER_ADDR=198.18.0.11 -x MASTER_PORT
            -x GLOO_SOCKET_IFNAME=eth0 -x ALLREDUCE_ONLY -x COMPRESS -x COLL_COMPRESS sh -c 'exec taskset -c "$OMPI_COMM_WORLD_RANK" "$@"' pin)
}

# allreduce_alone SIDE CONFIG: that side's allreduce of the model's gradients alone on CONFIG's link (2h16:
# compressed); appends "SIDE CONFIG 2 {"type": "allreduce", "ms": ...}" to $work/results.
nparams=""
allreduce_alone() {
    local side=$1 config=$2 rate=${2#*-} launch=() out=$work/out compress=none
    [ "${config%%-*}" != 2h16 ] || compress=fp16
    launch_hosts "$rate"
    port=$((port + 1))
    if [ "$side" = ours ]; then
        [ -n "$nparams" ] || nparams=$(/usr/bin/python3 -c 'import json,sys
print(json.loads(sys.argv[1])["elements"])' "$(grep -h '"allreduce"' "$work/results" | head -n 1 | cut -d' ' -f4-)")
        (cd "$work" && MASTER_PORT=$port COLL_COMPRESS=$compress "${launch[@]}" "$BUILD/bin/coll-bench" -b $((nparams * 4)) -e $((nparams * 4)) \
            -n 20 -w 5 -c 0) >"$out" 2>&1 || { cat "$out"; echo "bench-scaling: coll-bench on 2h-$rate failed"; exit 1; }
        # in place, as cifar-train reduces its gradients: the row's 10th field, microseconds
        awk -v n="$nparams" '$1 !~ /^#/ && NF > 10 { printf "{\"type\": \"allreduce\", \"elements\": %d, \"ms\": %.3f}\n", n, $10 / 1000 }' "$out"
    else
        (cd "$work" && MASTER_PORT=$port ALLREDUCE_ONLY=1 COMPRESS=$compress "${launch[@]}" /usr/bin/python3 "$TOP/trainer/bench/torch_ddp.py" \
            "$data" 1 1) >"$out" 2>&1 || { cat "$out"; echo "bench-scaling: gloo allreduce on 2h-$rate failed"; exit 1; }
        grep '"allreduce"' "$out"
    fi | sed "s/^/$side $config 2 /" >>"$work/results"
}

# run SIDE CONFIG: one measurement; appends "SIDE CONFIG RANKS <json of the timed epoch>" to $work/results.
port=29600
run() {
    local side=$1 config=$2 ranks=2 threads=1 launch=() cmd=() out=$work/out compress=none
    case $config in
    1p1t) ranks=1 ;;
    1p2t) ranks=1 threads=2 ;;
    2x1p1t) pair "$side"; return ;;
    2r) launch=("${MPIRUN[@]}") ;;
    2r-slurm) launch=(env SLURM_CONF="$cluster/slurm.conf" OMPI_MCA_btl=self,tcp OMP_NUM_THREADS=1
                      srun --mpi=pmix -N 2 -n 2 --ntasks-per-node=1 -t 10) ;;
    2h-*) launch_hosts "${config#2h-}" ;;
    2h16-*) launch_hosts "${config#2h16-}"; compress=fp16 ;;
    esac
    if [ "$side" = ours ]; then
        rm -f "$work/log.json"
        cmd=("$bin" --device cpu --threads $threads --data "$data" --epochs "$EPOCHS" --limit-test 64 --log-every 0
             --log-json "$work/log.json" --dir "$work/run" --checkpoint-dir "$work/run")
        [ "$compress" = none ] || cmd+=(--compress "$compress")
    else
        cmd=(/usr/bin/python3 "$TOP/trainer/bench/torch_ddp.py" "$data" $threads "$EPOCHS")
    fi
    port=$((port + 1))
    (cd "$work" && MASTER_PORT=$port COMPRESS=$compress OMP_NUM_THREADS=$threads "${launch[@]}" "${cmd[@]}") >"$out" 2>&1 ||
        { cat "$out"; echo "bench-scaling: $side $config failed"; exit 1; }
    if [ "$side" = ours ]; then tail -n 1 "$work/log.json"; else grep '^{' "$out" | tail -n 1; fi |
        sed "s/^/$side $config $ranks /" >>"$work/results"
}

# pair SIDE: the 2x1p1t configuration: two single processes at once, pinned to cores 0 and 1; appends one line
# in the 2r form (rank 0's epoch line, images_per_sec the sum of both).
pair() {
    local side=$1 i cmd pids=()
    for i in 0 1; do
        if [ "$side" = ours ]; then
            mkdir -p "$work/run$i"
            rm -f "$work/log$i.json"
            cmd=("$bin" --device cpu --threads 1 --data "$data" --epochs "$EPOCHS" --limit-test 64 --log-every 0
                 --log-json "$work/log$i.json" --dir "$work/run$i" --checkpoint-dir "$work/run$i")
        else
            cmd=(/usr/bin/python3 "$TOP/trainer/bench/torch_ddp.py" "$data" 1 "$EPOCHS")
        fi
        (cd "$work" && OMP_NUM_THREADS=1 taskset -c $i "${cmd[@]}") >"$work/out$i" 2>&1 &
        pids+=($!)
    done
    wait "${pids[0]}" && wait "${pids[1]}" || { cat "$work/out0" "$work/out1"; echo "bench-scaling: $side 2x1p1t failed"; exit 1; }
    for i in 0 1; do
        if [ "$side" = ours ]; then tail -n 1 "$work/log$i.json"; else grep '^{' "$work/out$i" | tail -n 1; fi
    done | /usr/bin/python3 -c '
import json, sys
a, b = (json.loads(l) for l in sys.stdin)
a["images_per_sec"] += b["images_per_sec"]
print(json.dumps(a))' | sed "s/^/$side 2x1p1t 2 /" >>"$work/results"
}

[ -z "${CONFIGS:-}" ] || configs=$(for c in $configs; do case " $CONFIGS " in *" $c "*) echo "$c" ;; esac; done)
for round in $(seq "$ROUNDS"); do
    echo "round $round: load $(cut -d' ' -f1-3 /proc/loadavg)"
    for config in $configs; do
        run ours "$config"
        [ $have_torch = 0 ] || run torch "$config"
        case $config in
        2h*)
            # the peer first: it knows the model's size
            [ $have_torch = 0 ] || allreduce_alone torch "$config"
            [ -z "$nparams" ] && [ $have_torch = 0 ] || allreduce_alone ours "$config"
            ;;
        esac
    done
done
[ $have_torch = 1 ] || [ "${PEER:-1}" = 0 ] ||
    echo "bench-scaling: no torch.distributed in Debian's python3 (python3-torch): the peer was not measured"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$TOP/trainer/bench/bench-scaling-table.py" <"$work/results"
