#!/usr/bin/env bash
# `scontrol requeue` of the bundled trainer's job (contrib/cifar/job.json, 2 ranks on n1+n2) while it
# trains: the second attempt resumes from the newest checkpoint (--resume auto in the generated script),
# both attempts' output is kept in the appended stdout.txt / stderr.txt under a header line each, every
# execution-log line names its attempt, the preparation ran again, `batchai-job status` shows attempt 2 and
# how attempt 1 ended; and the final model is bit for bit the one of the same job run uninterrupted first
# (compared with h5py dataset by dataset; fixed thread count).
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null || skip "Debian's python3-h5py and python3-numpy are needed"
cifar_cluster_start
model=$SHARE/cifar/saved_models/keras_cifar10_trained_model.h5
args='--device cpu --epochs 2 --limit-train 1280 --limit-test 64 --threads 1 --seed 3'
ref=$(submit_cifar "$args")
st=$(wait_job "$ref" 300)
[ "$st" = COMPLETED ] || fail "reference job $ref ended $st"
cp "$model" "$CL/reference.h5"
id=$(submit_cifar "$args")
logs=$SHARE/cifar/cifar/$id/stdouterr
for ((i = 0; i < 600; i++)); do grep -q '^Epoch 1/2' "$logs/stdout.txt" 2>/dev/null && break; sleep 0.1; done
grep -q '^Epoch 1/2' "$logs/stdout.txt" || fail "job $id never started training: $(cat "$logs"/std*.txt 2>&1)"
sleep 1
scontrol requeue "$id" || fail "scontrol requeue $id"
# Slurm holds a requeued job back for a while (its begin time moves on, about two minutes): once attempt 1
# is over on both nodes (the epilogs removed job_root/<id>), it is released at once.
for ((i = 0; i < 300; i++)); do
    [ "$(job_field "$id" JobState)" = PENDING ] && [ ! -e "$CL/jobs/$id" ] &&
        [ "$(sinfo -h -N -o '%N %T' | sort | tr '\n' ' ')" = "n1 idle n2 idle " ] && break
    sleep 0.1
done
sleep 1
scontrol update JobId="$id" StartTime=now || fail "cannot release the requeued job $id"
st=$(wait_job "$id" 300)
[ "$st" = COMPLETED ] || fail "job $id ended $st: $(tail -n 30 "$logs/stderr.txt")"

# Both attempts' output, each after its header; the second resumed.
for a in 1 2; do
    assert_grep "^batchai: attempt $a of job $id started" "$logs/stdout.txt"
    assert_grep "^batchai: attempt $a of job $id started" "$logs/stderr.txt"
    for n in n1 n2; do
        assert_grep "attempt $a: job preparation finished with exit code 0" "$logs/execution-$n.log"
        assert_grep "^batchai: attempt $a\$" "$logs/stdout-job_prep-$n.txt"
    done
done
[ "$(grep -c '^Epoch 1/2' "$logs/stdout.txt")" -ge 1 ] || fail "attempt 1's training output is gone"
assert_grep "^Resuming from .*/checkpoint-" "$logs/stdout.txt"
grep "^Resuming from\|stopping after" "$logs/stdout.txt"
cat "$logs"/execution-n1.log
st=$("$BUILD/bin/batchai-job" status "$id")
echo "$st"
grep -qx "attempt: *2" <<<"$st" || fail "batchai-job status does not show attempt 2: $st"
grep -q "^lastRequeue: *attempt 1 ended: " <<<"$st" || fail "batchai-job status does not say how attempt 1 ended: $st"

# The model: the same as the uninterrupted job's.
/usr/bin/python3 "$TOP/tests/trainer/h5_same.py" "$CL/reference.h5" "$model" || fail "the requeued job's model differs"
assert_nodes_idle
pass "requeued job $id: both attempts' logs kept, resumed, same model as an uninterrupted run"
