#!/usr/bin/env bash
# validate reports every fault of a file at once, each saying what to do: a container job on a site without
# containers, with a share this host does not have, gives both faults in one run (the share's naming the
# setting that maps it), and sbatch's plugin, which opens files the same way (batchai_jobfile.h), would give the same.
# A user's own share map (--share, sbatch's --batchai-share): bad words, the off switch, the script.
# run-tests: parallel
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/jobfile/jobfile-env.sh
bin=$PWD/$BUILD/san/bin/batchai-job
need_built "$bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=1; }
cat >"$tmp/recipe.json" <<'JSON'
{"properties": {"nodeCount": 1,
  "containerSettings": {"imageSourceRegistry": {"image": "tensorflow/tensorflow:1.8.0-gpu"}},
  "mountVolumes": {"azureFileShares": [{"azureFileUrl": "https://acct.file.core.windows.net/data", "relativeMountPath": "afs"}]},
  "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs",
  "customToolkitSettings": {"commandLine": "python train.py"}}}
JSON
out=$("$bin" -o shares_root="$tmp/shares" -o container_runtime=none validate "$tmp/recipe.json" 2>&1) &&
    no "validate accepted the recipe"
grep -q "this site runs no containers" <<<"$out" || no "no container fault: $out"
grep -qF "share \"data\" is not available on this cluster (no directory $tmp/shares/data): ask the admins to map it (share.data=DIR), or map it to a directory of yours (--batchai-share=data=DIR)" <<<"$out" ||
    no "no share fault with what to do, next to the container's: $out"
[ "$(wc -l <<<"$out")" = 2 ] || no "expected the two faults, got: $out"
# The share mapped: the container fault alone.
mkdir -p "$tmp/shares/data"
out=$("$bin" -o shares_root="$tmp/shares" -o container_runtime=none validate "$tmp/recipe.json" 2>&1)
[ "$(wc -l <<<"$out")" = 1 ] || no "after mapping the share, expected one fault, got: $out"

# A share map of the user's own (--share): its words checked, the off switch, and the script it gives.
recipe=$tmp/recipe.json
mkdir -p "$tmp/mine"
for bad in "data=relative" "data=/a/../b" "=/x" "data=/x,data=/y" "da,ta=/x"; do
    out=$("$bin" -o shares_root="$tmp/shares" --share "$bad" --no-host validate "$recipe" 2>&1) && no "--share $bad accepted"
    grep -q -- "--batchai-share: .*expected NAME=DIR" <<<"$out" || no "--share $bad: unclear refusal: $out"
done
out=$("$bin" -o shares_root=/nonexistent -o user_shares=no --share "data=$tmp/mine" validate "$recipe" 2>&1) &&
    no "--share accepted under user_shares=no"
grep -qF "share maps of your own are turned off on this site (user_shares=no)" <<<"$out" || no "off switch: $out"
script=$("$bin" -o shares_root=/nonexistent -o container_runtime=pyxis --share "data=$tmp/mine" translate "$recipe" 2>&1) || no "--share refused: $script"
grep -qF "#SBATCH --output=$tmp/mine/recipe/%j/stdouterr/stdout.txt" <<<"$script" ||
    no "the log directory is not in the user's directory: $(grep SBATCH <<<"$script")"
[ "$fail" = 0 ] && echo "PASS: every fault at once, each saying what to do"
exit "$fail"
