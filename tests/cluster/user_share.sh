#!/usr/bin/env bash
# A user maps a share of a job to a directory of their own at submission (sbatch --batchai-share=NAME=DIR,
# batchai-job --share): the job sees it at its mount path on both nodes. Hostile cases: a map to a directory
# only root reads is refused by sbatch; a link swapped after submission to such a directory, and a FIFO put
# in the directory's place, fail the job with the cause (the nodes reach the directory as the user only, so
# nothing leaks) and leave the nodes idle; user_shares=no refuses maps at submission and on the nodes.
. "$(dirname "$0")/lib.sh"
cluster_start
job='{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "cat $AZ_BATCHAI_JOB_MOUNT_ROOT/afs/input.txt", "processCount": 2},
  '"$LOGS_JSON"', "mountVolumes": {"azureFileShares": [
    {"azureFileUrl": "https://x.file.core.windows.net/myshare", "relativeMountPath": "myshare"},
    {"azureFileUrl": "https://x.file.core.windows.net/mydata", "relativeMountPath": "afs"}]}}}'
write_job us.json <<<"$job"
as_user "mkdir -p mydata d2 && echo user-data-ok >mydata/input.txt && echo fifo-dir >d2/input.txt && ln -s mydata link"
secret="ROOT-ONLY-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
install -d -m 0700 "$CL/rootdir"
echo "$secret" >"$CL/rootdir/input.txt"
leak_check() {
    local leaks
    leaks=$(grep -rl -- "$secret" "$CL/log" "$SHARE" "$WORK" 2>/dev/null || true)
    [ -z "$leaks" ] || fail "$1: the root-only file's content reached: $leaks"
}

# No map: refused, naming both ways to map the share.
if out=$(as_user "sbatch --batchai-job=us.json" </dev/null 2>&1); then fail "sbatch accepted an unmapped share: $out"; fi
grep -qF -- "--batchai-share=mydata=DIR" <<<"$out" || fail "the refusal does not say how to map it: $out"

# The user's own directory, with sbatch and with batchai-job.
id=$(submit --batchai-job=us.json --batchai-share="mydata=$WORK/mydata")
[ "$(wait_job "$id" 60)" = COMPLETED ] || fail "job $id ended $(job_field "$id" JobState): $(cat "$(log_dir "$id" us)/stderr.txt")"
[ "$(grep -c '^user-data-ok$' "$(log_dir "$id" us)/stdout.txt")" = 2 ] || fail "job $id did not read the user's data on both nodes"
install -m 0755 "$BUILD/bin/batchai-job" "$CL/batchai-job"
out=$(as_user "$CL/batchai-job --share mydata=$WORK/mydata -n us2 submit us.json --parsable" </dev/null 2>&1) ||
    fail "batchai-job submit --share failed: $out"
id=${out%%;*}
[ "$(wait_job "$id" 60)" = COMPLETED ] || fail "job $id (batchai-job --share) ended $(job_field "$id" JobState)"
assert_grep "^user-data-ok$" "$(log_dir "$id" us2)/stdout.txt"

# A directory only root reads: refused at submission.
if out=$(as_user "sbatch --batchai-job=us.json --batchai-share=mydata=$CL/rootdir" </dev/null 2>&1); then
    fail "sbatch accepted a map to root's 0700 directory: $out"
fi
grep -q "maps to $CL/rootdir (--batchai-share), which is not a directory you can read" <<<"$out" || fail "unclear refusal: $out"

# Swapped while the job waits: the link to root's directory, and a FIFO for the directory.
id_link=$(submit --batchai-job=us.json --batchai-share="mydata=$WORK/link" --hold)
id_fifo=$(submit --batchai-job=us.json --batchai-share="mydata=$WORK/d2" --hold)
as_user "ln -sfn $CL/rootdir link && rm -r d2 && mkfifo d2"
scontrol release "$id_link,$id_fifo"
for id in $id_link $id_fifo; do
    st=$(wait_job "$id" 60)
    [ "$st" = FAILED ] || fail "job $id ended $st"
    grep -q "user-data-ok\|fifo-dir" "$(log_dir "$id" us)/stdout.txt" 2>/dev/null && fail "job $id ran"
done
assert_grep "cannot read $WORK/link, share \"mydata\" of your own (--batchai-share): Permission denied" "$(log_dir "$id_link" us)/stderr.txt"
assert_grep "cannot read $WORK/d2, share \"mydata\" of your own (--batchai-share): Not a directory" "$(log_dir "$id_fifo" us)/stderr.txt"
leak_check "swapped link"
assert_nodes_idle

# The admin's off switch: at submission, and on the nodes for a job queued before it.
as_user "rm -f link && ln -s mydata link"
id=$(submit --batchai-job=us.json --batchai-share="mydata=$WORK/mydata" --hold)
echo "$(cat "$CL/plugstack.conf") user_shares=no" >"$CL/plugstack.conf"
if out=$(as_user "sbatch --batchai-job=us.json --batchai-share=mydata=$WORK/mydata" </dev/null 2>&1); then
    fail "sbatch accepted a user map under user_shares=no: $out"
fi
grep -qF "share maps of your own are turned off on this site (user_shares=no)" <<<"$out" || fail "unclear refusal: $out"
scontrol release "$id"
[ "$(wait_job "$id" 60)" = FAILED ] || fail "job $id, queued before user_shares=no, ended $(job_field "$id" JobState)"
assert_grep "user_shares=no" "$(log_dir "$id" us)/stderr.txt"
assert_nodes_idle
pass "user share maps: own directory read on both nodes; root-only directory, swapped link and FIFO refused with no leak; user_shares=no holds at submission and on the nodes"
