#!/usr/bin/env bash
# Hostile user vs the job file after submission (security findings 3, 9 and 17.1): the file sbatch
# validated is swapped, before the job starts, for a huge file, a FIFO, a link to a file the user cannot
# read, or a valid file with other content. Every node reads it as the user, O_NONBLOCK, regular files only,
# and compares it with the digest sbatch recorded: each job fails at once with the cause, nothing blocks
# (a FIFO used to hang the task until Slurm drained the node), and both nodes stay idle. A 1 MiB hostile
# file is refused by sbatch with a clear message.
. "$(dirname "$0")/lib.sh"
cluster_start
job='{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "echo main-ran", "processCount": 2},
  '"$LOGS_JSON, $MOUNT_JSON"', "environmentVariables": [{"name": "STAGE", "value": "original"}]}}'
cat >"$WORK/run.sh" <<'SH'
#!/bin/sh
echo script-ran STAGE=$STAGE
SH
chown "$TEST_USER:" "$WORK/run.sh"

# swap NAME HOW: submit NAME.json held, replace it as the user by HOW, release; the job must fail in time
# with a message matching $2 in its stderr.
swap() {
    local name=$1 want=$2 how=$3 form=${4:-generated} id st err
    write_job "$name.json" <<<"$job"
    if [ "$form" = script ]; then
        id=$(submit --batchai-job="$name.json" -N2 -o "$WORK/$name-%j.out" -e "$WORK/$name-%j.out" --hold run.sh)
        err=$WORK/$name-$id.out
    else
        id=$(submit --batchai-job="$name.json" --hold)
        err=$(log_dir "$id" "$name")/stderr.txt
    fi
    as_user "rm -f $name.json && $how"
    scontrol release "$id"
    st=$(wait_job "$id" 60)
    [ "$st" = FAILED ] || fail "$name: job $id ended $st"
    assert_grep "$want" "$err"
    grep -q "main-ran\|script-ran" "$err" "$(dirname "$err")"/stdout.txt 2>/dev/null && fail "$name: the job ran"
    assert_nodes_idle
}
swap fifo "not a regular file" "mkfifo fifo.json"
swap fifo-script "not a regular file" "mkfifo fifo-script.json" script
swap huge "larger than the limit of 1048576" "head -c 2000000 /dev/zero | tr '\\\\0' ' ' >huge.json"
swap shadow "Permission denied" "ln -s /etc/shadow shadow.json"
swap other "changed after it was submitted" "sed 's/original/changed/' >other.json <<'J'
$job
J"
swap other-script "changed after it was submitted" "sed 's/original/changed/' >other-script.json <<'J'
$job
J" script

# A 1 MiB file of hostile JSON is refused by sbatch, with its fault named, and quickly.
/usr/bin/python3 - "$WORK/big.json" <<'PY'
import sys
keys = ",".join('"k%d": %d' % (i, i) for i in range(60000))
open(sys.argv[1], "w").write('{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "true"}, "x": {%s}}}' % keys)
PY
chown "$TEST_USER:" "$WORK/big.json"
if out=$(as_user "timeout 20 sbatch --batchai-job=big.json" </dev/null 2>&1); then fail "sbatch accepted big.json: $out"; fi
grep -q "batchai: .*big.json: properties" <<<"$out" || fail "unclear refusal of big.json: $(head -c 600 <<<"$out")"
pass "FIFO, huge, unreadable and changed job files fail their jobs with the cause; nodes idle; 1 MiB file refused"
