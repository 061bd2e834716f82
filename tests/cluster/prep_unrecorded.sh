#!/usr/bin/env bash
# Issue 26's guard, for real: a node whose preparation did not record its success never starts the main
# step. Fault injected on the real cluster: on n2 the preparation command makes its node's execution log
# read-only (as a full or read-only log share would), so the wrapper's "job preparation finished with exit
# code 0" line is lost while the step itself ends 0 on both nodes and srun returns 0. The generated script
# must count one recorded success of two, say so, exit 1 without starting the main step, and the job must
# end FAILED with exit code 1, nodes idle, its job directory and job temp gone.
# (tests/jobfile/test_prep_check.sh covers the attempt arithmetic with srun stubbed.)
. "$(dirname "$0")/lib.sh"
cluster_start
# shellcheck disable=SC2016 # the node's variables, expanded by the preparation
write_prep_job pu.json 'echo prepared-$SLURMD_NODENAME; if [ $SLURMD_NODENAME = n2 ]; then chmod 444 \"$AZ_BATCHAI_STDOUTERR_DIR/execution-n2.log\"; fi'
id=$(submit --batchai-job=pu.json)
st=$(wait_job "$id")
logs=$(log_dir "$id" pu)
[ "$st" = FAILED ] || fail "job $id ended $st, want FAILED: $(cat "$logs/stderr.txt")"
[ "$(job_field "$id" ExitCode)" = 1:0 ] || fail "job $id exit code $(job_field "$id" ExitCode), want 1:0"
assert_grep "batchai: the job preparation finished on 1 of 2 nodes (attempt 1): the main step is not started" "$logs/stderr.txt"
# The fault happened as intended: both preparations ran to the end, n2's success was never recorded.
assert_grep prepared-n1 "$logs/stdout-job_prep-n1.txt"
assert_grep prepared-n2 "$logs/stdout-job_prep-n2.txt"
assert_grep "attempt 1: job preparation finished with exit code 0" "$logs/execution-n1.log"
! grep -q "finished" "$logs/execution-n2.log" || fail "n2's success was recorded: $(cat "$logs/execution-n2.log")"
! grep -qs MAIN-RAN "$logs/stdout.txt" || fail "the main step ran"
! grep -h "main step started" "$logs"/execution-n*.log || fail "a node logged that the main step started"
assert_nodes_idle
for d in "$CL/jobs/$id" "$CL/scratch/batchai/$id".n1 "$CL/scratch/batchai/$id".n2; do
    for i in $(seq 50); do [ -e "$d" ] || break; sleep 0.1; done
    [ ! -e "$d" ] || fail "job $id left $d"
done
! ls "$CL/jobs" | grep -q "^$id\.prolog-failed" || fail "job $id left a marker: $(ls "$CL/jobs")"
pass "job $id: n2's preparation success unrecorded: FAILED 1:0, 'finished on 1 of 2 nodes', no main step, nothing left"
