#!/usr/bin/env bash
# The tutorial's job file (contrib/cifar/job.json) end to end on the two-node cluster: a short run of the
# bundled trainer (2 ranks, 1 epoch on a few hundred images) leaves the model file and the Batch AI log
# layout in the share. The data is the CIFAR-10 subset in ../shared/data, exposed as the share's
# cifar-10-batches-bin directory (never copied).
. "$(dirname "$0")/lib.sh"
TRAINER=$BUILD/bin/cifar-train
DATA=${CIFAR10_DIR:-$TOP/../shared/data/cifar-10-batches-bin-subset}
[ -x "$TRAINER" ] || skip "$TRAINER is not built"
[ -f "$DATA/test_batch.bin" ] || skip_for shared "no CIFAR-10 data at $DATA (set CIFAR10_DIR)"
cluster_start
srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix MPI plugin here"
install -d -m 0755 "$CL/bin"
install -m 0755 "$TRAINER" "$CL/bin/cifar-train"
ln -s "$(cd "$DATA" && pwd -P)" "$SHARE/cifar-10-batches-bin"
cp "$TOP/contrib/cifar/job.json" "$WORK/cifar.json"
chown "$TEST_USER:" "$WORK/cifar.json"
out=$(as_user "PATH=$CL/bin:\$PATH OMPI_MCA_btl=self,tcp \
    CIFAR_TRAIN_ARGS='--device cpu --epochs 1 --limit-train 256 --limit-test 128 --threads 1' \
    sbatch --parsable --batchai-job=cifar.json" </dev/null 2>&1) || fail "sbatch: $out"
id=${out%%;*}
st=$(wait_job "$id")
logs=$(ls -d "$SHARE"/cifar/*/"$id"/stdouterr 2>/dev/null | head -n 1)
[ -n "$logs" ] || fail "no log directory for job $id under $SHARE/cifar"
[ "$st" = COMPLETED ] || fail "cifar job $id ended $st: $(tail -n 20 "$logs/stderr.txt")"
model=$SHARE/cifar/saved_models/keras_cifar10_trained_model.h5
assert_file "$model"
[ "$(head -c 8 "$model" | od -An -c | tr -d ' ')" = '211HDF\r\n032\n' ] || fail "$model is not an HDF5 file"
for f in stdout.txt stderr.txt execution-n1.log execution-n2.log; do assert_file "$logs/$f"; done
ls "$logs"/stdout-job_prep-*.txt >/dev/null || fail "no preparation output in $logs"
assert_grep "job preparation finished with exit code 0" "$logs/execution-n2.log"
grep -qi "epoch" "$logs/stdout.txt" || fail "no training progress in stdout.txt: $(head -c 1000 "$logs/stdout.txt")"
assert_nodes_idle
pass "contrib/cifar/job.json trained on n1+n2 (job $id): $model and the log layout in $logs"
