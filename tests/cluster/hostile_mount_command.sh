#!/usr/bin/env bash
# Hostile user vs allow_mount_command=no (security findings 5 and 17.2): the nodes re-check the site's
# policy on the file the prolog read, and run nothing the prolog did not prepare, so a mountCommand never
# runs, whichever way the job reached them:
# the plugin's option passed in SPANK's environment to `sbatch --wrap` (the allocator never sees it),
# `srun --batchai-job` making its own allocation, or a valid file swapped after sbatch accepted it (the job
# runs the snapshot sbatch took); inside a Batch AI job, `srun --batchai-job` naming the refused file, or any
# file but the job's own, starts nothing and says why (it once ran its task with the option ignored).
. "$(dirname "$0")/lib.sh"
cluster_start
# The mountCommand would leave a trace in the user's own directory (Batch AI appends the mount path).
write_job evil.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "echo main-ran"}, $LOGS_JSON,
  "mountVolumes": {"azureFileShares": [{"azureFileUrl": "https://x.file.core.windows.net/myshare", "relativeMountPath": "myshare"}],
                   "unmanagedFileSystems": [{"mountCommand": "touch $WORK/pwned", "relativeMountPath": "u"}]}}}
JSON
write_job good.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "echo main-ran"}, $LOGS_JSON, $MOUNT_JSON}}
JSON
refused="mountCommand is not allowed on this site (allow_mount_command=no)"
assert_not_run() {
    [ ! -e "$WORK/pwned" ] && [ ! -e "$WORK/pwned.u" ] || fail "$1: the mountCommand ran: $(ls "$WORK")"
    [ -z "$(find "$WORK" -name 'pwned*')" ] || fail "$1: the mountCommand ran: $(find "$WORK" -name 'pwned*')"
}

# sbatch refuses it outright.
if out=$(as_user "sbatch --batchai-job=evil.json" </dev/null 2>&1); then fail "sbatch accepted a mountCommand: $out"; fi
grep -q "$refused" <<<"$out" || fail "unclear refusal: $out"

# 1. The option in SPANK's environment, with --wrap: the allocator never parsed the file, and the prolog does
#    not see the option, so nothing on the node is prepared and the tasks, which never read the user's path,
#    refuse to run.
out=$(as_user "_SLURM_SPANK_OPTION_batchai_batchai_job=$WORK/evil.json sbatch --parsable -o $WORK/env-%j.out --wrap 'echo wrap-ran'" </dev/null 2>&1) ||
    fail "sbatch --wrap failed: $out"
id=${out%%;*}
st=$(wait_job "$id")
[ "$st" = FAILED ] || fail "job $id (option from the environment) ended $st"
assert_grep "node n1 was not prepared: the plugin's prolog did not run for this job there" "$WORK/env-$id.out"
grep -q "wrap-ran" "$WORK/env-$id.out" && fail "the script ran despite the policy"
assert_not_run "option in the environment"

# 2. srun making its own allocation.
if out=$(as_user "srun -N1 --batchai-job=$WORK/evil.json echo srun-ran" </dev/null 2>&1); then
    fail "srun --batchai-job ran a job with a mountCommand: $out"
fi
grep -q "$refused" <<<"$out" || fail "srun's refusal does not name the policy: $out"
grep -q "srun-ran" <<<"$out" && fail "srun's task ran despite the policy"
assert_not_run "srun --batchai-job"

# 3. A valid file, accepted by sbatch, swapped for the mountCommand one before the job starts: the job runs
#    the file as submitted (its snapshot), so the swap changes nothing.
id=$(submit --batchai-job=good.json --hold)
cp "$WORK/evil.json" "$WORK/good.json"
scontrol release "$id"
st=$(wait_job "$id")
[ "$st" = COMPLETED ] || fail "job $id (file swapped after sbatch) ended $st"
assert_grep "main-ran" "$(log_dir "$id" good)/stdout.txt"
assert_not_run "swapped file"

# 4. Inside a Batch AI job (the user's own script), srun --batchai-job with the refused file, then with
#    another valid file: srun starts nothing and says why; the job's own file still runs a step.
cp "$WORK/evil.json" "$WORK/evil2.json"; chown "$TEST_USER:" "$WORK/evil2.json"
write_job other.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "echo other-ran"}, $LOGS_JSON, $MOUNT_JSON}}
JSON
write_job inner.json <<JSON
{"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "echo main-ran"}, $LOGS_JSON, $MOUNT_JSON}}
JSON
write_job inner.sh <<'SH'
#!/bin/sh
srun -N1 --batchai-job=evil2.json echo evil-step-ran; echo "evil rc=$?"
srun -N1 --batchai-job=other.json echo other-step-ran; echo "other rc=$?"
srun -N1 --batchai-job=inner.json echo own-step-ran; echo "own rc=$?"
SH
id=$(submit --batchai-job=inner.json -o "$WORK/inner-%j.out" inner.sh)
st=$(wait_job "$id")
out=$WORK/inner-$id.out
[ "$st" = COMPLETED ] || fail "job $id (srun inside it) ended $st: $(cat "$out")"
assert_grep "$refused" "$out"
assert_grep "batchai: evil2.json cannot run on this cluster (batchai-job validate says the same); srun started nothing" "$out"
assert_grep "this job's steps run with its own job file $WORK/inner.json, checked when it was submitted: srun --batchai-job=other.json cannot change it" "$out"
grep -q "evil-step-ran\|other-step-ran" "$out" && fail "srun inside job $id ran a step with a file it ignored: $(cat "$out")"
grep -q "evil rc=0\|other rc=0" "$out" && fail "srun inside job $id returned 0 for a refused file: $(cat "$out")"
assert_grep "own-step-ran" "$out"
assert_grep "own rc=0" "$out"
assert_not_run "srun --batchai-job inside a job"
assert_nodes_idle
pass "mountCommand refused on the nodes for --wrap with the option in the environment and srun; a swapped file runs as submitted; srun inside a job refuses the refused file and any file but the job's own"
