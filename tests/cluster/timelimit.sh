#!/usr/bin/env bash
# A bundled-trainer job that reaches its time limit checkpoints before Slurm kills it: contrib/cifar/job.json
# opts in with "x-checkpointable": true, so the generated script asks for SIGUSR1 60 s before the limit
# (#SBATCH --signal=B:USR1@60) and passes it on to the main step;
# cifar-train stops after its current step with checkpoint-E-step-S.h5 (or, when the warning lands during
# an epoch's validation or save, at that epoch's checkpoint-E.h5) and exit status 3, well before the
# limit (here --time=1 on the sbatch command line, so the warning is due at once), and the checkpoint
# loads (evaluate checks its sums); batchai-job status says it stopped at its time limit and names that
# checkpoint.
# run-tests: beside
. "$(dirname "$0")/lib.sh"
cifar_cluster_start
# Far more epochs than a minute allows: only the warning can end it before the limit.
id=$(submit_cifar '--device cpu --epochs 1000 --limit-train 1280 --limit-test 64 --threads 1' --time=1)
st=$(wait_job "$id" 150)
logs=$SHARE/cifar/cifar/$id/stdouterr
cat "$logs/execution-n1.log"
if [ "$st" != FAILED ] || [ "$(job_field "$id" ExitCode)" != 3:0 ]; then
    fail "job $id ended $st, exit $(job_field "$id" ExitCode) (want FAILED 3:0: stopped by the warning): $(tail -n 20 "$logs/stderr.txt")"
fi
assert_grep "attempt 1: SIGUSR1: the time limit is near, passed to the main step" "$logs/execution-n1.log"
# The warning lands mid-epoch (stop after the current step: checkpoint-E-step-S.h5) or, less often,
# during the epoch's validation or save (stop there: checkpoint-E.h5, written just before); both are right.
stop=$(grep "^SIGUSR1: stopping after epoch" "$logs/stdout.txt") ||
    fail "no 'SIGUSR1: stopping after epoch' line in $logs/stdout.txt"
echo "$stop"
if [[ $stop =~ ^SIGUSR1:\ stopping\ after\ epoch\ ([0-9]+),\ step\ ([0-9]+)/40$ ]]; then
    ckpt=$SHARE/cifar/cifar/$id/shared/checkpoints/checkpoint-${BASH_REMATCH[1]}-step-${BASH_REMATCH[2]}.h5
    assert_grep "^Saved checkpoint at .*/checkpoint-${BASH_REMATCH[1]}-step-${BASH_REMATCH[2]}.h5\$" "$logs/stdout.txt"
elif [[ $stop =~ ^SIGUSR1:\ stopping\ after\ epoch\ ([0-9]+)\ \(checkpoint-([0-9]+)\.h5\)$ ]] &&
     [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]; then
    ckpt=$SHARE/cifar/cifar/$id/shared/checkpoints/checkpoint-${BASH_REMATCH[1]}.h5
else
    fail "unexpected stop line: $stop"
fi
[ -f "$ckpt" ] || fail "the stop line names $ckpt, which is not there"
# What the user reads: that it stopped at its time limit, and where its checkpoint is (the site path).
st=$("$BUILD/bin/batchai-job" status "$id") || true
echo "$st"
grep -qF "JobTimeLimit: stopped at its time limit: Slurm's warning (SIGUSR1, x-checkpointable) came at " <<<"$st" &&
    grep -qF "and its main step ended with exit code 3:0; its last checkpoint is $(realpath "$ckpt")" <<<"$st" ||
    fail "status does not say job $id stopped at its time limit with its checkpoint: $st"
grep -qxF "checkpoint:       $(realpath "$ckpt")" <<<"$st" || fail "status names no checkpoint: $st"
"$CL/bin/cifar-train" evaluate "$ckpt" --data "$DATA" --limit-test 64 --threads 1 >/dev/null ||
    fail "$ckpt does not load"
assert_nodes_idle
pass "job $id at its time limit: warned, checkpointed ($(basename "$ckpt")), exit 3 before the kill"
