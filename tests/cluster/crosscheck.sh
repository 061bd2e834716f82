#!/usr/bin/env bash
# batchai-job answers as sbatch (issue 27): every job file of tests/jobfiles (job.json, Azure ML YAML, valid
# and invalid) goes through `batchai-job validate` and `translate` and through a real
# `sbatch --batchai-job=FILE`, under three site settings (the plugin's line, rewritten between passes, which
# batchai-job reads as sbatch does): the test default, allow_mount_command=yes with container_runtime=none,
# and container_runtime=pyxis with other priority, python and mpi words. The verdicts must agree; a refusal
# must carry the same faults (each of batchai-job's lines is a line of sbatch's); where accepted, the script sbatch
# stored (`scontrol write batch_script` of the held job) must be byte for byte what translate printed.
# The jobs are held and cancelled: none runs. Command-line sizes (-N1 -n1) keep files that ask for more
# nodes than the two the cluster has acceptable to slurmctld; they do not change the stored script.
. "$(dirname "$0")/lib.sh"
cluster_start
install -m 0755 "$BUILD/bin/batchai-job" "$CL/batchai-job" # the user may not reach the build tree
cp -r "$TOP/tests/jobfiles" "$WORK/jobfiles"
chown -R "$TEST_USER:" "$WORK/jobfiles"
base_line=$(cat "$CL/plugstack.conf")
settings=(
    ""
    "allow_mount_command=yes container_runtime=none"
    "container_runtime=pyxis priority.normal=nice:10 python=/opt/py/bin/python3 mpi=pmi2"
)
names=("the test default" "allow_mount_command=yes container_runtime=none" "pyxis, nice, python, mpi")

# One pass as the user: per file, validate, translate and sbatch, their status and output kept in $out/N.*.
cat >"$WORK/pass.sh" <<'SH'
#!/bin/bash
out=$1 bj=$2; shift 2
n=0
for f in "$@"; do
    n=$((n + 1))
    cd "$(dirname "$f")" || exit 1
    echo "$f" >"$out/$n.file"
    "$bj" validate "$f" >/dev/null 2>"$out/$n.verr"; echo $? >"$out/$n.vrc"
    "$bj" translate "$f" >"$out/$n.script" 2>"$out/$n.terr"; echo $? >"$out/$n.trc"
    sbatch --parsable --hold -N1 -n1 --ntasks-per-node=1 --batchai-job="$f" </dev/null >"$out/$n.id" 2>"$out/$n.serr"
    echo $? >"$out/$n.src"
done
SH
chmod 0755 "$WORK/pass.sh"
mapfile -t files < <(find "$WORK/jobfiles" -type f \( -name '*.json' -o -name '*.yml' \) | sort)
[ "${#files[@]}" -ge 100 ] || fail "only ${#files[@]} job files found under tests/jobfiles"

total_acc=0 total_ref=0
for i in "${!settings[@]}"; do
    words=${settings[$i]} name=${names[$i]}
    echo "$base_line $words" >"$CL/plugstack.conf"
    # Every share directory and image bundle the files name under these settings exists, so that their
    # scripts are compared too (a missing share is refused by both alike, which says less).
    missing=$(as_user "$CL/batchai-job validate ${files[*]}" 2>&1 >/dev/null || true)
    while read -r kind path; do
        case $path in "$CL"/*) ;; *) fail "a host path outside the cluster: $path" ;; esac
        install -d -m 0755 "$path"
        if [ "$kind" = b ]; then echo '{}' >"$path/config.json"; fi
    done < <(sed -n 's/.*(no directory \([^)]*\)).*/d \1/p; s/.*(no OCI bundle at \([^)]*\)).*/b \1/p' <<<"$missing" | sort -u)
    out=$CL/out-$i
    install -d -o "$TEST_USER" -m 0755 "$out"
    as_user "$WORK/pass.sh $out $CL/batchai-job ${files[*]}"
    acc=0 ref=0
    for ((n = 1; n <= ${#files[@]}; n++)); do
        f=$(cat "$out/$n.file") vrc=$(cat "$out/$n.vrc") trc=$(cat "$out/$n.trc") src=$(cat "$out/$n.src")
        what="${f#"$WORK"/} under $name"
        [ "$trc" = "$vrc" ] || fail "$what: validate exits $vrc, translate $trc"
        if [ "$vrc" = 0 ]; then
            [ "$src" = 0 ] || fail "$what: batchai-job accepts it, sbatch refuses it: $(cat "$out/$n.serr")"
            id=$(cut -d';' -f1 "$out/$n.id")
            scontrol write batch_script "$id" "$out/$n.stored" >/dev/null ||
                fail "$what: scontrol write batch_script $id failed"
            scancel "$id"
            cmp -s "$out/$n.script" "$out/$n.stored" ||
                fail "$what: the script sbatch stored differs from translate's: $(diff "$out/$n.script" "$out/$n.stored" | head -n 20)"
            acc=$((acc + 1))
        else
            [ "$vrc" = 1 ] || fail "$what: validate exits $vrc"
            [ "$src" != 0 ] || { scancel "$(cut -d';' -f1 "$out/$n.id")"; fail "$what: batchai-job refuses it, sbatch accepts it: $(cat "$out/$n.verr")"; }
            cmp -s "$out/$n.verr" "$out/$n.terr" || fail "$what: validate and translate give different faults"
            [ -s "$out/$n.verr" ] || fail "$what: refused without a reason"
            while IFS= read -r line; do
                grep -qxF -- "sbatch: error: batchai: $line" "$out/$n.serr" ||
                    fail "$what: sbatch does not give the fault '$line': $(cat "$out/$n.serr")"
            done <"$out/$n.verr"
            ref=$((ref + 1))
        fi
    done
    echo "$name: ${#files[@]} files, $acc accepted with the same script, $ref refused with the same faults"
    total_acc=$((total_acc + acc)) total_ref=$((total_ref + ref))
done

# batchai-job's -n, --set and --settings act alike in translate, validate and submit: the script translate
# prints with them is the one submit hands sbatch, and a setting that validate refuses, or that would make
# the submitted script differ from translate's (sbatch runs the site's settings), stops submit.
echo "$base_line" >"$CL/plugstack.conf"
write_job opts.json <<JSON
{"properties": {"nodeCount": 1, "customMpiSettings": {"commandLine": "echo hi \$AZ_BATCHAI_STDOUTERR_DIR", "processCount": 1},
  $LOGS_JSON, $MOUNT_JSON}}
JSON
bj=$CL/batchai-job
as_user "$bj -n exp1-run2 translate opts.json >opts.sh"
id=$(as_user "$bj -n exp1-run2 submit opts.json --parsable --hold" </dev/null) || fail "submit -n failed: $id"
id=${id%%;*}
scontrol write batch_script "$id" "$CL/opts.stored" >/dev/null || fail "scontrol write batch_script $id failed"
[ "$(job_field "$id" JobName)" = exp1-run2 ] || fail "submit -n: job $id is named $(job_field "$id" JobName)"
scancel "$id"
cmp -s "$WORK/opts.sh" "$CL/opts.stored" ||
    fail "submit -n stored another script than translate -n: $(diff "$WORK/opts.sh" "$CL/opts.stored" | head -n 20)"
bad=share.myshare=/nonexistent
if out=$(as_user "$bj -o $bad validate opts.json" 2>&1); then fail "validate accepted $bad"; fi
fault=$(head -n 1 <<<"$out")
if out=$(as_user "$bj -o $bad submit opts.json --test-only" </dev/null 2>&1); then fail "submit -o $bad passed: $out"; fi
grep -qxF -- "$fault" <<<"$out" || fail "submit -o $bad does not give validate's fault '$fault': $out"
if out=$(as_user "$bj -o mpi=pmi2 submit opts.json --parsable --hold" </dev/null 2>&1); then
    scancel "${out%%;*}"; fail "submit -o mpi=pmi2 went ahead although sbatch would run pmix: $out"
fi
grep -q "change the script of opts.json" <<<"$out" || fail "submit -o mpi=pmi2: unclear refusal: $out"
# The site's own words in a file, and a --set that repeats one of them: nothing changes, so submit goes on.
read -r -a words <<<"$base_line"
printf '%s\n' "${words[@]:2}" >"$WORK/same.conf"
chmod 0644 "$WORK/same.conf"
# It runs, and the nodes name it as sbatch did: its logs are under the name given.
id=$(as_user "$bj --settings $WORK/same.conf -o mpi=pmix -n exp1-run3 submit opts.json --parsable" </dev/null) ||
    fail "submit with settings equal to the site's failed: $id"
id=${id%%;*}
[ "$(wait_job "$id" 60)" = COMPLETED ] || fail "job $id (submit -n exp1-run3) did not complete"
assert_grep "^hi .*/exp1-run3/$id/stdouterr$" "$(log_dir "$id" exp1-run3)/stdout.txt"
[ -z "$(squeue -h -o %i)" ] || fail "jobs left: $(squeue)"
pass "${#files[@]} job files x ${#settings[@]} settings: $total_acc accepted alike (same script), $total_ref refused alike; -n, --set and --settings alike in translate, validate and submit"
