#!/usr/bin/env bash
# Golden-file tests of batchai-job (sanitizer build): every known valid job file validates and translates
# to exactly tests/jobfile/golden/<name>.script, which bash parses (bash -n) and shellcheck passes; every
# invalid file fails
# validation with exactly golden/<name>.err, and that output names the JSON path its .why file gives. The
# invalid files include the hostile ones of about 1 MiB that gen_hostile writes here (not kept in git); its
# valid ones must validate. Azure ML command jobs (YAML): every file tests/jobfiles/azureml/verdicts.txt names
# (the 32 of $shared/reference/azureml/jobs/ and ours) gets its reviewed verdict: it translates to exactly
# golden/azureml-<name>.script, or is refused with exactly golden/azureml-<name>.err naming the field the
# verdict gives; paths of the shared folder and of this tree read SHARED and TOP in the goldens.
# A valid file that the site's policy refuses (a key-vault secret) has golden/<name>.err instead: validate and
# translate both refuse it with exactly those faults. The site is the test's, not this host's: every run names
# its settings, and --no-host leaves out the host's checks (share directories, staged images), as a node
# does. The two answers the command once gave unlike sbatch are pinned here too (issue 27): under
# allow_mount_command=no a mountCommand is refused, and under container_runtime=none a container, by validate
# and translate alike.
# UPDATE_GOLDEN=1 rewrites the golden files instead of comparing (review the diff).
# run-tests: parallel
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/jobfile/jobfile-env.sh
command -v shellcheck >/dev/null || { echo "SKIP(dep): shellcheck is not installed (contrib/install-deps.sh)"; exit 77; }
bin=$PWD/$BUILD/san/bin/batchai-job
need_built "$bin"
golden=$PWD/tests/jobfile/golden
shared=${SHARED_DIR:-$PWD/../shared}
# The recipes are part of the corpus: without them the test would pass on less than it claims.
[ -d "$shared/reference/batchai/recipes" ] ||
    { echo "SKIP(shared): no $shared/reference/batchai/recipes (set SHARED_DIR)"; exit 77; }
mkdir -p "$golden"
pass=0 fail=0

check() { # name actual-file
    local want=$golden/$1
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
        cp "$2" "$want"
    elif ! diff -u "$want" "$2" >"$2.diff" 2>&1; then
        echo "FAIL $1: differs from golden"; head -n 40 "$2.diff"; return 1
    fi
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
hostile=$out/hostile
if ! "$BUILD/tests/gen_hostile" "$hostile"; then
    echo "FAIL: gen_hostile could not write the hostile job files"; exit 1
fi
# The site of every run below: the defaults, with mountCommand allowed so that its script is shown, and the
# one cluster a valid file names mapped to a partition with typed GPUs.
site=(--no-host -o allow_mount_command=yes -o cluster.nc6=gpu -o gpus.nc6=a100:4)
# refused NAME FILE SETTINGS...: validate and translate both exit 1 with the same faults, golden/NAME.err.
refused() {
    local name=$1 f=$2; shift 2
    local dir base rc_v rc_t
    dir=$(dirname "$f") base=$(basename "$f")
    (cd "$dir" && "$bin" "$@" validate "$base") >"$out/v" 2>"$out/$name.err"; rc_v=$?
    (cd "$dir" && "$bin" "$@" translate "$base") >"$out/t" 2>"$out/$name.terr"; rc_t=$?
    if [ $rc_v -ne 1 ] || [ $rc_t -ne 1 ] || [ -s "$out/v" ] || [ -s "$out/t" ]; then
        echo "FAIL $f ($*): validate exit $rc_v, translate exit $rc_t; both must refuse it"
        cat "$out/v" "$out/$name.err" "$out/t"; return 1
    fi
    if ! cmp -s "$out/$name.err" "$out/$name.terr"; then
        echo "FAIL $f ($*): validate and translate give different faults"
        diff -u "$out/$name.err" "$out/$name.terr"; return 1
    fi
    check "$name.err" "$out/$name.err"
}
# The GPU refusals: a cluster the site does not map, and more ranks per node than its nodes have GPUs (each
# rank gets a GPU of its own).
for args in "policy-mount-command tests/jobfiles/valid/custom-toolkit-unmanaged-fs.json -o allow_mount_command=no" \
            "policy-runtime-none tests/jobfiles/valid/chainer.json -o container_runtime=none" \
            "unmapped-cluster tests/jobfiles/valid/custom-mpi-private-registry.json -o partition=cpu" \
            "too-many-gpus tests/jobfiles/valid/custom-mpi-private-registry.json -o cluster.nc6=gpu -o gpus.nc6=a100:2"; do
    # shellcheck disable=SC2086 # the words of $args
    if refused $args --no-host; then pass=$((pass + 1)); echo "ok   $args"; else fail=$((fail + 1)); fi
done
valid=( "$shared"/reference/batchai/recipes/*.json contrib/*/job.json tests/jobfiles/valid/*.json )
for f in "${valid[@]}"; do
    dir=$(dirname "$f") base=$(basename "$f" .json)
    case $f in contrib/*) base=contrib-$(basename "$dir") ;; esac
    if [ -f "$golden/$base.err" ]; then
        if refused "$base" "$f" "${site[@]}"; then pass=$((pass + 1)); echo "ok   $f (refused)"; else fail=$((fail + 1)); fi
        continue
    fi
    # Run from the file's directory so messages and names do not depend on where the tree is.
    if ! (cd "$dir" && "$bin" "${site[@]}" validate "$(basename "$f")") >"$out/v" 2>&1; then
        echo "FAIL $f: does not validate"; cat "$out/v"; fail=$((fail + 1)); continue
    fi
    # translate is given the path from the repository's parent, so a job.json is named after its directory.
    rel=$(basename "$(dirname "$f")")/$(basename "$f")
    if ! (cd "$dir/.." && "$bin" "${site[@]}" translate "$rel") >"$out/$base.script" 2>"$out/err"; then
        echo "FAIL $f: does not translate"; cat "$out/err"; fail=$((fail + 1)); continue
    fi
    if ! bash -n "$out/$base.script" 2>"$out/err"; then
        echo "FAIL $f: the batch script is not valid bash"; cat "$out/err"; fail=$((fail + 1)); continue
    fi
    if ! shellcheck -s bash "$out/$base.script" >"$out/err" 2>&1; then
        echo "FAIL $f: shellcheck finds faults in the batch script"; cat "$out/err"; fail=$((fail + 1)); continue
    fi
    if check "$base.script" "$out/$base.script"; then pass=$((pass + 1)); echo "ok   $f"; else fail=$((fail + 1)); fi
done
# The tutorial's GPU job as contrib ships it, on a site that maps the tutorial's cluster (nc6cluster, one GPU
# per node) to a GPU partition.
gpu_job=contrib/cifar/cifar-gpu.job.json
if ! (cd contrib && "$bin" --no-host -o cluster.nc6cluster=gpu -o gpus.nc6cluster=1 translate cifar/cifar-gpu.job.json) \
    >"$out/contrib-cifar-gpu.script" 2>"$out/err"; then
    echo "FAIL $gpu_job: does not translate"; cat "$out/err"; fail=$((fail + 1))
elif ! bash -n "$out/contrib-cifar-gpu.script" || ! shellcheck -s bash "$out/contrib-cifar-gpu.script" >"$out/err" 2>&1; then
    echo "FAIL $gpu_job: the batch script is not valid bash or shellcheck finds faults"; cat "$out/err"; fail=$((fail + 1))
elif check contrib-cifar-gpu.script "$out/contrib-cifar-gpu.script"; then
    pass=$((pass + 1)); echo "ok   $gpu_job"
else
    fail=$((fail + 1))
fi
# The tutorial's own command line, az batchai job create --cluster nc6cluster: its job.json names no cluster,
# and --cluster chooses it as cluster.id would (partition gpu, one GPU per rank); a file that names another
# cluster is refused, by validate and translate alike.
if ! (cd contrib && "$bin" --no-host -o cluster.nc6cluster=gpu -o gpus.nc6cluster=1 translate cifar/job.json \
    --cluster nc6cluster) >"$out/contrib-cifar-cluster.script" 2>"$out/err"; then
    echo "FAIL contrib/cifar/job.json --cluster nc6cluster: does not translate"; cat "$out/err"; fail=$((fail + 1))
elif ! shellcheck -s bash "$out/contrib-cifar-cluster.script" >"$out/err" 2>&1; then
    echo "FAIL contrib/cifar/job.json --cluster nc6cluster: shellcheck finds faults"; cat "$out/err"; fail=$((fail + 1))
elif check contrib-cifar-cluster.script "$out/contrib-cifar-cluster.script"; then
    pass=$((pass + 1)); echo "ok   contrib/cifar/job.json --cluster nc6cluster"
else
    fail=$((fail + 1))
fi
if refused cluster-mismatch contrib/cifar/cifar-gpu.job.json --no-host -o cluster.nc6cluster=gpu --cluster=other; then
    pass=$((pass + 1)); echo "ok   cifar-gpu.job.json --cluster=other (refused)"
else
    fail=$((fail + 1))
fi
# Validation only: the scripts of files at the size limit would be as large as they are.
for f in "$hostile"/valid/*.json "$hostile"/valid/*.yml; do
    if (cd "$(dirname "$f")" && "$bin" "${site[@]}" validate "$(basename "$f")") >"$out/v" 2>&1; then
        pass=$((pass + 1)); echo "ok   $(basename "$f")"
    else
        echo "FAIL $(basename "$f"): does not validate"; head -n 5 "$out/v"; fail=$((fail + 1))
    fi
done
for f in tests/jobfiles/invalid/*.json "$hostile"/invalid/*.json "$hostile"/invalid/*.yml; do
    base=$(basename "$f" .json)
    base=${base%.yml}
    (cd "$(dirname "$f")" && "$bin" "${site[@]}" validate "$(basename "$f")") >/dev/null 2>"$out/$base.err"
    rc=$?
    if [ $rc -ne 1 ]; then
        echo "FAIL $f: exit $rc, expected 1"; cat "$out/$base.err"; fail=$((fail + 1)); continue
    fi
    why=$(cat "$f.why" 2>/dev/null || echo "")
    if [ -n "$why" ] && [ "$why" != "(document)" ] && ! grep -qF -- "$why" "$out/$base.err"; then
        echo "FAIL $f: message does not name $why"; cat "$out/$base.err"; fail=$((fail + 1)); continue
    fi
    if check "$base.err" "$out/$base.err"; then pass=$((pass + 1)); echo "ok   $f"; else fail=$((fail + 1)); fi
done
aml=tests/jobfiles/azureml
top=$PWD
refs=$(cd "$shared/reference/azureml/jobs" 2>/dev/null && pwd -P) ||
    { echo "SKIP(shared): no $shared/reference/azureml/jobs (set SHARED_DIR)"; exit 77; }
for f in "$refs"/*.y*ml; do
    grep -q "^$(basename "$f") " "$aml/verdicts.txt" || { echo "FAIL $f: no verdict in $aml/verdicts.txt"; fail=$((fail + 1)); }
done
while read -r file verdict field; do
    case $file in '' | '#'*) continue ;; esac
    f=$top/$aml/$file
    [ -f "$f" ] || f=$refs/$file
    base=azureml-${file%.y*ml}
    (cd "$(dirname "$f")" && "$bin" --no-host -s "$top/$aml/site.conf" translate "$file") >"$out/$base.script" 2>"$out/$base.err"
    rc=$?
    sed -i "s|$refs|SHARED/reference/azureml/jobs|g; s|$top|TOP|g" "$out/$base.script" "$out/$base.err"
    if [ "$verdict" = translates ]; then
        if [ $rc -ne 0 ]; then echo "FAIL $file: does not translate"; cat "$out/$base.err"; fail=$((fail + 1)); continue; fi
        if ! bash -n "$out/$base.script" 2>"$out/err" || ! shellcheck -s bash "$out/$base.script" >"$out/err" 2>&1; then
            echo "FAIL $file: the batch script is not valid bash or shellcheck finds faults"; cat "$out/err"
            fail=$((fail + 1)); continue
        fi
        got=$base.script
    else
        if [ $rc -ne 1 ] || ! grep -qF -- ": $field: " "$out/$base.err"; then
            echo "FAIL $file: exit $rc, expected 1 with a message naming $field"; cat "$out/$base.err"
            fail=$((fail + 1)); continue
        fi
        got=$base.err
    fi
    if check "$got" "$out/$got"; then pass=$((pass + 1)); echo "ok   $file ($verdict${field:+ $field})"; else fail=$((fail + 1)); fi
done <"$aml/verdicts.txt"
echo "golden: $pass passed, $fail failed"
[ $fail -eq 0 ]
