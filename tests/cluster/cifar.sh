#!/usr/bin/env bash
# The tutorial's job file (contrib/cifar/job.json) end to end on the two-node cluster: a short run of the
# bundled trainer (2 ranks, 1 epoch on a few hundred images) leaves the model file and the Batch AI log
# layout in the share. The data is the CIFAR-10 subset in ../shared/data, exposed as the share's
# cifar-10-batches-bin directory (never copied). Then again with the share mapped to the user's own
# directory (sbatch --batchai-share), where the data is linked the same way.
. "$(dirname "$0")/lib.sh"
cifar_cluster_start
id=$(submit_cifar '--device cpu --epochs 1 --limit-train 256 --limit-test 128 --threads 1')
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

# The same file with its share "myshare" mapped to a directory of the user's own (--batchai-share), as a
# user would run the tutorial without an admin: the data, logs and model are all in the user's directory.
as_user "mkdir -p mine && ln -s $(cd "$DATA" && pwd -P) mine/cifar-10-batches-bin"
id2=$(submit_cifar '--device cpu --epochs 1 --limit-train 128 --limit-test 64 --threads 1' --batchai-share="myshare=$WORK/mine")
st=$(wait_job "$id2")
mine=$WORK/mine/cifar
[ "$st" = COMPLETED ] || fail "cifar job $id2 (user share) ended $st: $(tail -n 20 "$mine/cifar/$id2/stdouterr/stderr.txt")"
assert_file "$mine/saved_models/keras_cifar10_trained_model.h5"
[ "$(stat -c %U "$mine/saved_models/keras_cifar10_trained_model.h5")" = "$TEST_USER" ] || fail "the model is not the user's"
grep -qi "epoch" "$mine/cifar/$id2/stdouterr/stdout.txt" || fail "no training progress in the user's log directory"
assert_nodes_idle
pass "contrib/cifar/job.json trained on n1+n2 (job $id): $model and the log layout in $logs; again with myshare mapped to the user's own directory (job $id2)"
