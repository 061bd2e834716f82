#!/usr/bin/env bash
# `scontrol requeue` of the bundled trainer's job (contrib/cifar/job.json, 2 ranks on n1+n2) while it trains,
# twice: each later attempt resumes from the newest checkpoint (the job file's own --resume auto; it opts in
# with x-checkpointable, so its script asks for --requeue), every attempt's output is kept in the appended
# stdout.txt / stderr.txt under a header line each, every execution-log line names its attempt, the
# preparation ran again each time, `batchai-job status` shows attempt 3 and how attempt 2 ended; and the final
# model is bit for bit the one of the same job run uninterrupted first (compared with h5py dataset by dataset;
# fixed thread count). Slurm itself starts each attempt: a requeued job waits cred_expire + 1 s (slurmctld's
# requeue delay, so that the nodes have dropped the job's credential and run the prolog again), and this
# cluster's cred_expire is 10 s instead of 120. What a user watches continues across the attempts: the CSV
# beside stdout.txt has one row per epoch, none twice, and the TENSORBOARD output directory's event files
# continue their steps with the CSV's values (tests/trainer/watch_check.py).
# run-tests: beside
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import h5py, numpy, google.protobuf, crc32c' 2>/dev/null ||
    skip "Debian's python3-h5py, python3-numpy, python3-protobuf and python3-crc32c are needed"
command -v protoc >/dev/null || skip "protoc is needed (Debian: protobuf-compiler)"
export LOCALCLUSTER_CRED_EXPIRE=10
cifar_cluster_start
model=$SHARE/cifar/saved_models/keras_cifar10_trained_model.h5
args='--device cpu --epochs 4 --limit-train 1280 --limit-test 64 --threads 1 --seed 3'
ref=$(submit_cifar "$args")
st=$(wait_job "$ref" 300)
[ "$st" = COMPLETED ] || fail "reference job $ref ended $st"
cp "$model" "$CL/reference.h5"
id=$(submit_cifar "$args")
logs=$SHARE/cifar/cifar/$id/stdouterr
for ((i = 0; i < 600; i++)); do grep -q '^Epoch 1/4' "$logs/stdout.txt" 2>/dev/null && break; sleep 0.1; done
grep -q '^Epoch 1/4' "$logs/stdout.txt" || fail "job $id never started training: $(cat "$logs"/std*.txt 2>&1)"
sleep 1
# requeue_and_wait N: requeue attempt N while it trains, and wait until Slurm starts attempt N+1 on its own.
requeue_and_wait() {
    scontrol requeue "$id" || fail "scontrol requeue $id (attempt $1)"
    for ((i = 0; i < 600; i++)); do
        [ "$(job_field "$id" Restarts)" = "$1" ] && [ "$(job_field "$id" JobState)" = RUNNING ] && return
        sleep 0.1
    done
    fail "attempt $(($1 + 1)) of job $id did not start within 60 s of the requeue: $(scontrol show job "$id")"
}
requeue_and_wait 1
# Attempt 2 trains (it resumed from attempt 1's checkpoint); requeue it too.
for ((i = 0; i < 600; i++)); do grep -q '^Resuming from' "$logs/stdout.txt" 2>/dev/null && break; sleep 0.1; done
grep -q '^Resuming from' "$logs/stdout.txt" || fail "attempt 2 of job $id never resumed: $(tail -n 30 "$logs/stderr.txt")"
sleep 1
requeue_and_wait 2
st=$(wait_job "$id" 300)
[ "$st" = COMPLETED ] || fail "job $id ended $st: $(tail -n 30 "$logs/stderr.txt")"

# Every attempt's output, each after its header; the later ones resumed.
for a in 1 2 3; do
    assert_grep "^batchai: attempt $a of job $id started" "$logs/stdout.txt"
    assert_grep "^batchai: attempt $a of job $id started" "$logs/stderr.txt"
    for n in n1 n2; do
        assert_grep "attempt $a: job preparation finished with exit code 0" "$logs/execution-$n.log"
        assert_grep "^batchai: attempt $a\$" "$logs/stdout-job_prep-$n.txt"
    done
done
[ "$(grep -c '^Epoch 1/4' "$logs/stdout.txt")" -ge 1 ] || fail "attempt 1's training output is gone"
[ "$(grep -c '^Resuming from .*/checkpoint-' "$logs/stdout.txt")" = 2 ] || fail "attempts 2 and 3 did not both resume"

grep "^Resuming from\|stopping after" "$logs/stdout.txt"
cat "$logs"/execution-n1.log
st=$("$BUILD/bin/batchai-job" status "$id")
echo "$st"
grep -qx "attempt: *3" <<<"$st" || fail "batchai-job status does not show attempt 3: $st"
grep -q "^lastRequeue: *attempt 2 ended: " <<<"$st" || fail "batchai-job status does not say how attempt 2 ended: $st"

# One CSV row per epoch and continuing TensorBoard steps over the three attempts.
/usr/bin/python3 "$TOP/tests/trainer/watch_check.py" --csv "$logs/training.csv" \
    --tb "$SHARE/cifar/cifar/$id/outputs/tensorboard" --tb-files 0 --epochs 4 ||
    fail "the requeued job's CSV or event files are not one continuous record"

# The model: the same as the uninterrupted job's.
/usr/bin/python3 "$TOP/tests/trainer/h5_same.py" "$CL/reference.h5" "$model" || fail "the requeued job's model differs"

# batchai-job terminate mid-epoch: the trainer saves where it stopped and names the checkpoint by its site
# path with a --resume for a new job; the job reads terminated; the epoch-1 curve is drawn; a new job
# resumed from that checkpoint gives the uninterrupted run's model.
install -m 0755 "$BUILD/bin/batchai-job" "$CL/batchai-job"
tid=$(submit_cifar "$args")
tlogs=$SHARE/cifar/cifar/$tid/stdouterr
for ((i = 0; i < 600; i++)); do grep -q '^Epoch 2/4' "$tlogs/stdout.txt" 2>/dev/null && break; sleep 0.1; done
grep -q '^Epoch 2/4' "$tlogs/stdout.txt" || fail "job $tid never reached epoch 2: $(tail -n 30 "$tlogs/stderr.txt")"
out=$(as_user "$CL/batchai-job terminate $tid --grace 60") || fail "terminate $tid: $out"
echo "$out"
grep -q "^job $tid: terminated: it stopped within [0-9]* s (Slurm state FAILED, exit code 3:0)" <<<"$out" ||
    fail "terminate did not stop job $tid: $out $(tail -n 20 "$tlogs/stderr.txt")"
st=$(as_user "$CL/batchai-job status $tid") || true
grep -q "^executionState: *terminated" <<<"$st" && grep -q "^error: *JobTerminated: .*stopped; the job ended FAILED with exit code 3:0" <<<"$st" ||
    fail "status of the terminated job: $st"
grep -q "^SIGTERM: stopping after epoch 2, step [0-9]*/40\$" "$tlogs/stdout.txt" || fail "no mid-epoch stop: $(tail -n 5 "$tlogs/stdout.txt")"
ckpt=$(sed -n 's/^Saved checkpoint at \(.*\)$/\1/p' "$tlogs/stdout.txt")
[ -f "$ckpt" ] || fail "the checkpoint '$ckpt' job $tid named is not there after the job: $(tail -n 5 "$tlogs/stdout.txt")"
grep -qxF "Stopped: checkpoint $ckpt; this job, requeued, resumes from it by --resume auto; a new job or run continues from it with --resume $ckpt" "$tlogs/stdout.txt" ||
    fail "no resume hint for a new job: $(tail -n 3 "$tlogs/stdout.txt")"
[ -s "$tlogs/training.png" ] || fail "the terminated job has no training.png: $(ls "$tlogs")"
rid=$(submit_cifar "$args --resume $ckpt")
st=$(wait_job "$rid" 300)
[ "$st" = COMPLETED ] || fail "job $rid resumed from $ckpt ended $st"
grep -qxF "Saved trained model at $(realpath "$model") " "$SHARE/cifar/cifar/$rid/stdouterr/stdout.txt" ||
    fail "the final model is not named by its site path: $(grep 'Saved trained' "$SHARE/cifar/cifar/$rid/stdouterr/stdout.txt")"
/usr/bin/python3 "$TOP/tests/trainer/h5_same.py" "$CL/reference.h5" "$model" || fail "the model resumed after terminate differs"
assert_nodes_idle
pass "job $id requeued twice: every attempt's logs kept, each resumed, same model as an uninterrupted run; job $tid terminated mid-epoch, resumed by a new job to the same model"
