#!/usr/bin/env bash
# Hostile user vs the log directory (security findings 2, 3 and 17.3): a log directory whose parent is a link
# into a root directory, and a symlink, a FIFO and a hard link planted at the per-node log files of the next
# job. Root writes nothing in the user's places, so the links lead nowhere; the user's own steps refuse a log
# file that is not a regular file instead of blocking on it. Every job ends with a message naming the cause,
# the root-owned victim stays unchanged, and both nodes stay idle.
. "$(dirname "$0")/lib.sh"
cluster_start
victim_make
logs=$WORK/logs

# 1. The log directory's parent is a link to a root directory, made after sbatch checked the prefix.
as_user "mkdir -p '$logs'"
write_job evil.json <<JSON
{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "echo main-ran", "processCount": 2},
  "stdOutErrPathPrefix": "$logs", "jobPreparation": {"commandLine": "echo prep-ran"}}}
JSON
id=$(submit --batchai-job=evil.json -o "$WORK/evil-%j.out" -e "$WORK/evil-%j.out" --hold)
as_user "ln -s '$VICTIM' '$logs/evil'"
scontrol release "$id"
st=$(wait_job "$id")
[ "$st" = FAILED ] || fail "job $id logging through a link into root's directory ended $st"
assert_grep "preparing node n1 failed: as uid $TEST_UID: cannot create $logs/evil/$id/stdouterr: Permission denied" "$WORK/evil-$id.out"
grep -q "main-ran" "$WORK/evil-$id.out" && fail "the main step ran"
assert_victim_unchanged
assert_nodes_idle

# 2. The next job's per-node log files, planted in advance: a FIFO, a link to root's file, and a hard link
#    to it (made here by root, as a system without protected_hardlinks would let the user).
write_job plant.json <<JSON
{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "echo main-ran", "processCount": 2},
  "stdOutErrPathPrefix": "$logs", "jobPreparation": {"commandLine": "echo prep-ran"}}}
JSON
next=$((id + 1))
d=$logs/plant/$next/stdouterr
as_user "mkdir -p '$d' && mkfifo '$d/execution-n1.log' && ln -s '$VICTIM/file' '$d/stdout-job_prep-n2.txt'"
ln "$VICTIM/file" "$d/stderr-job_prep-n2.txt"
VICTIM_BEFORE=$(victim_state) # the hard link raised the link count only
id=$(submit --batchai-job=plant.json)
[ "$id" = "$next" ] || fail "job id $id, expected $next"
st=$(wait_job "$id" 60)
[ "$st" = FAILED ] || fail "job $id with planted log files ended $st"
assert_grep "$d/execution-n1.log is not a regular file" "$d/stderr.txt"
assert_grep "$d/stdout-job_prep-n2.txt is not a regular file" "$d/stderr.txt"
grep -q "main-ran" "$d/stdout.txt" && fail "the main step ran"
[ -p "$d/execution-n1.log" ] || fail "the FIFO was replaced"
assert_victim_unchanged
assert_nodes_idle

# 3. A hard link alone passes as a regular file: the user's step appends as the user, which root's file
#    refuses, and the preparation fails naming the node.
next=$((id + 1))
d=$logs/plant/$next/stdouterr
as_user "mkdir -p '$d'"
ln "$VICTIM/file" "$d/stdout-job_prep-n1.txt"
VICTIM_BEFORE=$(victim_state)
id=$(submit --batchai-job=plant.json)
st=$(wait_job "$id" 60)
[ "$st" = FAILED ] || fail "job $id with a hard-linked log file ended $st"
assert_grep "job preparation failed on node n1" "$d/stderr.txt"
assert_victim_unchanged
assert_nodes_idle
pass "linked log parent, planted FIFO, symlink and hard link: jobs fail with the cause, root's files unchanged"
