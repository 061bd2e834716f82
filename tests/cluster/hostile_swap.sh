#!/usr/bin/env bash
# The job file after submission. A job runs the file as it was when sbatch returned (the snapshot travels with
# the job): edited, deleted, or swapped by a hostile user for a FIFO, a huge file or a link to a file only root
# reads while the job waits, it still runs the submitted content, and nothing of the link's target reaches
# the job or a log. A file with secrets (whose values must not sit in slurmctld's state) is read again on
# every node, as the user, O_NONBLOCK, regular files only, and held to the digest sbatch recorded (security
# findings 3, 9 and 17.1): swapped, its job fails at once with the cause, nothing blocks (a FIFO used to hang
# the task until Slurm drained the node), and both nodes stay idle. A 1 MiB hostile file is refused by sbatch
# with a clear message.
. "$(dirname "$0")/lib.sh"
cluster_start
job='{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "echo main-ran-$STAGE", "processCount": 2},
  '"$LOGS_JSON, $MOUNT_JSON"', "environmentVariables": [{"name": "STAGE", "value": "original"}]}}'
with_secret=${job%\}\}}', "secrets": [{"name": "TOKEN", "value": "tok"}]}}'
cat >"$WORK/run.sh" <<'SH'
#!/bin/sh
echo script-ran STAGE=$STAGE
echo "copies=$( (env; srun -N1 -n1 env) | grep -c BATCHAI_JOB_TEXT)"
SH
chown "$TEST_USER:" "$WORK/run.sh"
leak="ROOT-ONLY-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
install -d -m 0700 "$CL/rootdir"
echo "{\"properties\": {\"x\": \"$leak\"}}" >"$CL/rootdir/secret.json"

# swap NAME CONTENT HOW [script]: submit NAME.json (CONTENT) held, replace it as the user by HOW; the job's
# id and output file are recorded, all jobs are released together and judged below.
ids=() names=() outs=()
swap() {
    local name=$1 content=$2 how=$3 form=${4:-generated} id out
    write_job "$name.json" <<<"$content"
    if [ "$form" = script ]; then
        id=$(submit --batchai-job="$name.json" -N2 -o "$WORK/$name-%j.out" -e "$WORK/$name-%j.out" --hold run.sh)
        out=$WORK/$name-$id.out
    else
        id=$(submit --batchai-job="$name.json" --hold)
        out=$(log_dir "$id" "$name")
    fi
    as_user "rm -f $name.json && $how"
    ids+=("$id") names+=("$name") outs+=("$out")
}
changed="sed 's/original/changed/' >\$f <<'J'
$job
J"
# Snapshots: every one must run the submitted content.
swap edit "$job" "f=edit.json; $changed"
swap edit-script "$job" "f=edit-script.json; $changed" script
swap deleted "$job" "true"
swap fifo "$job" "mkfifo fifo.json"
swap huge "$job" "head -c 2000000 /dev/zero | tr '\\\\0' ' ' >huge.json"
swap rootlink "$job" "ln -s $CL/rootdir/secret.json rootlink.json"
swap shadow-script "$job" "ln -s /etc/shadow shadow-script.json" script
# Files with secrets: read again on the nodes, which refuse what changed.
swap s-fifo "$with_secret" "mkfifo s-fifo.json"
swap s-fifo-script "$with_secret" "mkfifo s-fifo-script.json" script
swap s-huge "$with_secret" "head -c 2000000 /dev/zero | tr '\\\\0' ' ' >s-huge.json"
swap s-shadow "$with_secret" "ln -s /etc/shadow s-shadow.json"
swap s-other "$with_secret" "f=s-other.json; sed 's/original/changed/' >\$f <<'J'
$with_secret
J"
swap s-other-script "$with_secret" "f=s-other-script.json; sed 's/original/changed/' >\$f <<'J'
$with_secret
J" script
scontrol release "$(IFS=,; echo "${ids[*]}")"

want_fail() {
    case $1 in
    s-fifo*) echo "not a regular file" ;;
    s-huge) echo "larger than the limit of 1048576" ;;
    s-shadow) echo "Permission denied" ;;
    s-other*) echo "changed after it was submitted" ;;
    esac
}
for i in "${!ids[@]}"; do
    id=${ids[$i]} name=${names[$i]} out=${outs[$i]}
    st=$(wait_job "$id" 60)
    case $out in *.out) err=$out stdout=$out ;; *) err=$out/stderr.txt stdout=$out/stdout.txt ;; esac
    case $name in
    s-*)
        [ "$st" = FAILED ] || fail "$name: job $id ended $st"
        assert_grep "$(want_fail "$name")" "$err"
        grep -q "main-ran\|script-ran" "$err" "$stdout" 2>/dev/null && fail "$name: the job ran" ;;
    *)
        [ "$st" = COMPLETED ] || fail "$name: job $id ended $st: $(cat "$err")"
        if [ "$out" = "$stdout" ]; then
            assert_grep "script-ran STAGE=original" "$stdout"
            assert_grep "^copies=0$" "$stdout" # no task's environment holds the snapshot
        else
            [ "$(grep -c '^main-ran-original$' "$stdout")" = 2 ] ||
                fail "$name: job $id did not run the submitted content on both nodes: $(cat "$stdout")"
        fi
        grep -q "changed" "$stdout" && fail "$name: job $id ran the edited file" ;;
    esac
done
leaks=$(grep -rl -- "$leak" "$CL/log" "$SHARE" "$WORK" 2>/dev/null || true)
[ -z "$leaks" ] || fail "the root-only file's content reached: $leaks"
assert_nodes_idle

# A 1 MiB file of hostile JSON is refused by sbatch, with its fault named, and quickly.
/usr/bin/python3 - "$WORK/big.json" <<'PY'
import sys
keys = ",".join('"k%d": %d' % (i, i) for i in range(60000))
open(sys.argv[1], "w").write('{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "true"}, "x": {%s}}}' % keys)
PY
chown "$TEST_USER:" "$WORK/big.json"
if out=$(as_user "timeout 20 sbatch --batchai-job=big.json" </dev/null 2>&1); then fail "sbatch accepted big.json: $out"; fi
grep -q "batchai: .*big.json: properties" <<<"$out" || fail "unclear refusal of big.json: $(head -c 600 <<<"$out")"
pass "edited, deleted and swapped job files run as submitted (no leak); with secrets, swaps fail with the cause; nodes idle; 1 MiB file refused"
