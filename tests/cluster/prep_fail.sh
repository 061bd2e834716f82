#!/usr/bin/env bash
# A failing jobPreparation fails the job, names the node and the exit code, and drains no node.
. "$(dirname "$0")/lib.sh"
cluster_start
# shellcheck disable=SC2016 # $SLURMD_NODENAME is the node's, expanded by the preparation
write_prep_job pf.json 'if [ $SLURMD_NODENAME = n2 ]; then echo broken >&2; exit 3; fi'
id=$(submit --batchai-job=pf.json)
st=$(wait_job "$id")
logs=$(log_dir "$id" pf)
[ "$st" = FAILED ] || fail "job $id ended $st, want FAILED"
assert_grep "job preparation failed on node n2 with exit code 3" "$logs/stderr.txt"
grep -q MAIN-RAN "$logs/stdout.txt" && fail "the main step ran after a failed preparation"
assert_grep "exit code 3" "$logs/execution-n2.log"
assert_nodes_idle
[ -z "$(sinfo -h -R)" ] || fail "a node has a drain reason: $(sinfo -R)"

# The same with the user's own script: the prolog runs the preparation, the job fails, nodes stay idle.
cat >"$WORK/main.sh" <<'SH'
#!/bin/bash
echo MAIN-RAN
SH
chown "$TEST_USER:" "$WORK/main.sh"
id=$(submit --batchai-job=pf.json -N2 -o "$WORK/pf-%j.out" main.sh)
st=$(wait_job "$id")
[ "$st" = FAILED ] || fail "script job $id ended $st, want FAILED"
assert_grep "preparation failed on node n2 with exit code 3" "$WORK/pf-$id.out"
grep -q MAIN-RAN "$WORK/pf-$id.out" && fail "the user's script ran after a failed preparation"
assert_nodes_idle
[ -z "$(sinfo -h -R)" ] || fail "a node has a drain reason: $(sinfo -R)"
pass "failed preparation on n2 failed jobs $id and before with node and exit code; nodes idle"
