#!/usr/bin/env bash
# Azure ML pipelines on the two-node cluster, by an unprivileged user with `batchai-job submit pipeline.yml`:
# Azure's own basics 3a_basic_pipeline, 1a_e2e_local_components and 3b_pipeline_with_data, unchanged, their
# computes mapped to the partition and their environments to the host (environment.REF=host; `python` is
# the host's /usr/bin/python3 on the user's PATH, which sbatch passes on).
#   - every step runs as a Slurm job, each after the steps whose outputs it reads (Slurm's own StartTime and
#     EndTime), and reads them (1a: score reads train's model.txt, eval score's score.txt; 3b: B lists the
#     file A wrote);
#   - status --json has the graph (steps, dependencies, states, outputs), checked against
#     schemas/batchai-pipeline-status.schema.json by python3-jsonschema;
#   - a failing middle step stops the rest (wait exits with its code, the last step never runs), or not,
#     under settings.continue_on_step_failure (the last step runs);
#   - when the third sbatch fails, the two steps already queued are cancelled;
#   - terminate ID cancels every step, the running one and the one waiting for it;
#   - sbatch --batchai-job=pipeline.yml is refused with the batchai-job submit line.
# Azure's hello-sweep (unchanged, 4 trials, at most 2 at a time) runs as one job array: at most 2 trials at
# once and 2 at some time (Slurm's StartTime/EndTime of each task; each trial's python waits 2 s first so
# that they overlap), each trial got its index's parameters, and status names the trial with the least
# random_metric, read from each trial's MLflow file store. MLflow is not in Debian: hello-sweep.py logs
# through tests/cluster/mlflow_filestore, a stand-in that writes MLflow's documented file-store layout.
# A sweep as a pipeline step: the next step reads the best trial's output; status --json names the best;
# without the metric logged the sweep step fails saying so and the next step never runs; terminate of the
# pipeline gives its running trial SIGTERM and the grace, as terminate of one job does; a terminated sweep or
# pipeline is cancelled in status, and wait exits non-zero. A checkpointable trial is exec'd and warned.
. "$(dirname "$0")/lib.sh"
BASICS=$TOP/../shared/reference/azureml/pipelines/basics
[ -d "$BASICS" ] || skip_for shared "no $BASICS"
cluster_start "container_runtime=none cluster.cpu-cluster=debug environment.python=host" \
    "environment.docker.io/python=host" \
    "environment.azureml://registries/azureml/environments/sklearn-1.5/labels/latest=host" \
    "environment.azureml:AzureML-sklearn-1.5@latest=host"
install -d -m 0755 "$CL/bin"
ln -s /usr/bin/python3 "$CL/bin/python"
install -m 0755 "$BUILD/bin/batchai-job" "$CL/bin/batchai-job" # the user may not reach the build tree
for p in 3a_basic_pipeline 1a_e2e_local_components 3b_pipeline_with_data; do cp -r "$BASICS/$p" "$WORK/"; done
cp -r "$BASICS/../../sweeps" "$WORK/"
cp -r "$TOP/tests/cluster/mlflow_filestore" "$CL/pylib"
chmod -R a+rX "$CL/pylib"
install -d -m 0755 "$CL/slowbin"
printf '#!/bin/sh\nsleep 2\nexec /usr/bin/python3 "$@"\n' >"$CL/slowbin/python"
chmod 0755 "$CL/slowbin/python"
chown -R "$TEST_USER:" "$WORK"
chmod -R u+w "$WORK" # the references are read-only; the logs go beside the pipeline, as a command job's
bj() { as_user "PATH=$CL/bin:\$PATH batchai-job $*" </dev/null 2>&1; }
# submit_pipeline DIR FILE [OPTIONS]: the pipeline's id.
submit_pipeline() {
    local out
    out=$(bj "submit $1/$2 --parsable ${3:-}") || fail "batchai-job submit $1/$2: $out"
    echo "$out"
}
# ids P: the job ids of pipeline P's steps, "name=id" each.
ids() { bj "status $1 --json" | /usr/bin/python3 -c 'import json, sys
for s in json.load(sys.stdin)["steps"]: print(s["name"] + "=" + s["jobId"])'; }
epoch() { date -d "$(job_field "$1" "$2")" +%s; }
# after A B: job B started after job A ended (Slurm's own records).
after() { [ "$(epoch "$2" StartTime)" -ge "$(epoch "$1" EndTime)" ] || fail "job $2 started before job $1 ended"; }

# 1. sbatch alone cannot submit a graph, nor an array.
out=$(as_user "sbatch --parsable --batchai-job=3a_basic_pipeline/pipeline.yml" </dev/null 2>&1) &&
    fail "sbatch took a pipeline: $out"
grep -q 'use `batchai-job submit FILE`' <<<"$out" || fail "sbatch's refusal does not name batchai-job submit: $out"
out=$(as_user "sbatch --parsable --batchai-job=sweeps/hello-sweep.yml" </dev/null 2>&1) && fail "sbatch took a sweep: $out"
grep -q 'a sweep (its trials a job array) is several Slurm jobs.*use `batchai-job submit FILE`' <<<"$out" ||
    fail "sbatch's refusal of a sweep does not name batchai-job submit: $out"

# 2. The three basics, submitted together.
p3a=$(submit_pipeline 3a_basic_pipeline pipeline.yml "--experiment exp3a")
p1a=$(submit_pipeline 1a_e2e_local_components pipeline.yml)
p3b=$(submit_pipeline 3b_pipeline_with_data pipeline.yml)
for p in "$p3a" "$p1a" "$p3b"; do
    out=$(bj "wait $p --timeout 120") || fail "pipeline $p: $out; $(bj "status $p")"
done
declare -A id
while IFS== read -r n i; do id[1a.$n]=$i; done < <(ids "$p1a")
while IFS== read -r n i; do id[3b.$n]=$i; done < <(ids "$p3b")
after "${id[1a.train_job]}" "${id[1a.score_job]}"
after "${id[1a.score_job]}" "${id[1a.evaluate_job]}"
after "${id[3b.component_a]}" "${id[3b.component_b]}"
after "${id[3b.component_b]}" "${id[3b.component_c]}"
out=$(bj "list --experiment exp3a") || fail "list --experiment exp3a: $out"
[ "$(awk 'NR > 1 {print $2}' <<<"$out" | sort | uniq -c | awk '{print $1 $2}')" = 3succeeded ] ||
    fail "list --experiment exp3a does not show 3a's three steps: $out"
grep -q "I'm component A" "$WORK/3a_basic_pipeline/pipeline/component_a/$p3a/stdouterr/stdout.txt" ||
    fail "3a: component_a printed nothing"
s1a=$WORK/1a_e2e_local_components/pipeline
grep -q '^Model:  ' "$s1a/score_job/${id[1a.score_job]}/stdouterr/stdout.txt" || fail "1a: score_job read no model"
json=$(bj "status $p1a --json") || fail "status $p1a: $json"
/usr/bin/python3 -c 'import json, sys, jsonschema
jsonschema.validate(json.loads(sys.argv[2]), json.load(open(sys.argv[1])))' \
    "$TOP/schemas/batchai-pipeline-status.schema.json" "$json" || fail "status --json against the schema: $json"
report=$(/usr/bin/python3 -c 'import json, sys
o = json.loads(sys.argv[1]); s = {x["name"]: x for x in o["steps"]}
assert o["executionState"] == "succeeded", o["executionState"]
assert s["evaluate_job"]["dependsOn"] == ["score_job"], s["evaluate_job"]
print(o["outputs"]["pipeline_job_evaluation_report"]["path"])' "$json") || fail "status --json of 1a: $json"
assert_file "$report/eval_result.txt"
b_out=$WORK/3b_pipeline_with_data/pipeline/component_b/${id[3b.component_b]}/stdouterr/stdout.txt
a_file=$(ls "$WORK/3b_pipeline_with_data/pipeline/component_a/${id[3b.component_a]}/outputs/component_a_output/")
grep -q "reading file: $a_file" "$b_out" || fail "3b: component_b did not read component_a's $a_file: $(cat "$b_out")"

# 3. A failing middle step: the rest never runs, wait exits with its code; under continue_on_step_failure
# the last step runs.
cd "$WORK/3b_pipeline_with_data"
sed 's/^command: .*/command: exit 3/; /^  python hello/d' componentB.yml >componentB_fail.yml
sed 's/componentB.yml/componentB_fail.yml/' pipeline.yml >fail.yml
sed 's/^settings:/settings:\n  continue_on_step_failure: true/' fail.yml >cont.yml
chown "$TEST_USER:" componentB_fail.yml fail.yml cont.yml
cd - >/dev/null
pf=$(submit_pipeline 3b_pipeline_with_data fail.yml)
pc=$(submit_pipeline 3b_pipeline_with_data cont.yml)
rc=0
out=$(bj "wait $pf --timeout 120") || rc=$?
[ "$rc" = 3 ] || fail "wait of a pipeline whose step exits 3 exited $rc: $out"
while IFS== read -r n i; do id[f.$n]=$i; done < <(ids "$pf")
nodes=$(job_field "${id[f.component_c]}" NodeList)
[ "$(job_field "${id[f.component_c]}" JobState)" = CANCELLED ] && { [ -z "$nodes" ] || [ "$nodes" = "(null)" ]; } ||
    fail "the step after the failed one ran: $(scontrol -o show job "${id[f.component_c]}")"
out=$(bj "list $pf") || fail "list $pf: $out"
[ "$(awk 'NR > 1 {print $1 "=" $2 "=" $4}' <<<"$out" | tr '\n' ' ')" = "${id[f.component_a]}=succeeded=component_a ${id[f.component_b]}=failed=component_b ${id[f.component_c]}=cancelled=component_c " ] ||
    fail "list $pf: $out"
out=$(bj "status $pf") && fail "status of a failed pipeline exited 0: $out"
grep -q '^executionState: *failed$' <<<"$out" || fail "status $pf: not failed: $out"
grep -q '^component_c  *[0-9]*  *cancelled  *-  *component_b$' <<<"$out" || fail "status $pf: component_c not cancelled: $out"
rc=0
out=$(bj "wait $pc --timeout 120") || rc=$?
[ "$rc" != 0 ] || fail "wait of a pipeline with a failed step exited 0: $out"
while IFS== read -r n i; do id[c.$n]=$i; done < <(ids "$pc")
nodes=$(job_field "${id[c.component_c]}" NodeList)
[ -n "$nodes" ] && [ "$nodes" != "(null)" ] ||
    fail "under continue_on_step_failure the last step did not run: $(scontrol -o show job "${id[c.component_c]}")"

# 4. The third sbatch fails: the first two are cancelled, nothing of the pipeline runs.
install -d -m 0755 "$CL/fake"
cat >"$CL/fake/sbatch" <<EOF
#!/bin/bash
n=\$(( \$(cat "$WORK/sbatch-count" 2>/dev/null || echo 0) + 1 )); echo \$n >"$WORK/sbatch-count"
[ \$n = 3 ] && { echo "sbatch: error: refused by the test" >&2; exit 1; }
out=\$($(command -v sbatch) "\$@") || exit; echo "\$out" >>"$WORK/sbatch-ids"; echo "\$out"
EOF
chmod 0755 "$CL/fake/sbatch"
out=$(as_user "PATH=$CL/fake:$CL/bin:\$PATH batchai-job submit 3b_pipeline_with_data/pipeline.yml" </dev/null 2>&1) &&
    fail "a pipeline whose third sbatch failed was submitted: $out"
grep -q 'step component_c: sbatch failed: sbatch: error: refused by the test' <<<"$out" || fail "the failed sbatch is not named: $out"
grep -q 'the 2 steps already submitted were cancelled' <<<"$out" || fail "no word of the cancelled steps: $out"
[ "$(wc -l <"$WORK/sbatch-ids")" = 2 ] || fail "expected two jobs submitted: $(cat "$WORK/sbatch-ids")"
while read -r j; do
    st=$(wait_job "${j%%;*}" 30)
    [ "$st" = CANCELLED ] || fail "job ${j%%;*} of the half-submitted pipeline ended $st, not CANCELLED"
done <"$WORK/sbatch-ids"

# 5. terminate: every step of a pipeline, the running one and the one waiting for it.
cat >"$WORK/slow.yml" <<'YAML'
type: pipeline
settings: {default_compute: azureml:cpu-cluster}
jobs:
  a:
    type: command
    component: {command: "sleep 60 # ${{outputs.out}}", outputs: {out: {type: uri_folder}}}
  b:
    type: command
    component: {command: "ls ${{inputs.in}}", inputs: {in: {type: uri_folder}}}
    inputs: {in: "${{parent.jobs.a.outputs.out}}"}
YAML
chown "$TEST_USER:" "$WORK/slow.yml"
ps=$(submit_pipeline . slow.yml)
while IFS== read -r n i; do id[s.$n]=$i; done < <(ids "$ps")
for ((i = 0; i < 100; i++)); do [ "$(job_field "${id[s.a]}" JobState)" = RUNNING ] && break; sleep 0.1; done
[ "$(job_field "${id[s.a]}" JobState)" = RUNNING ] || fail "slow.yml: step a did not start"
out=$(bj "terminate $ps --grace 1") || fail "terminate $ps: $out"
# a got terminate's SIGTERM (its sleep ends FAILED, or CANCELLED after the grace); b never ran.
st=$(wait_job "${id[s.a]}" 30)
[ "$st" = FAILED ] || [ "$st" = CANCELLED ] || fail "terminate $ps: step a ended $st"
st=$(wait_job "${id[s.b]}" 30)
nodes=$(job_field "${id[s.b]}" NodeList)
[ "$st" = CANCELLED ] && { [ -z "$nodes" ] || [ "$nodes" = "(null)" ]; } || fail "terminate $ps: step b ended $st on '$nodes'"
rc=0
out=$(bj "wait $ps --timeout 30") || rc=$?
[ "$rc" != 0 ] || fail "wait of a terminated pipeline exited 0: $out"

# 9. A checkpointable trial (BATCHAI_CHECKPOINTABLE): submitted (it was refused as several commands once the
# sweep's setup came before it), and its one command exec'd with its own value, so Slurm's warning before the
# time limit reaches the program, which says so and exits 3. trial_timeout 120 (--time=2): slurmctld sends the
# warning (60 s before the limit) at its first 30-s check that falls within 90 s of the limit, 30 s or more after
# the start; with --time=1 that check can come before the batch script starts and the warning is lost. It runs
# beside cases 6 to 8 and is checked after them.
install -d -o "$TEST_USER" "$WORK/sw"
cat >"$CL/bin/warn-me" <<'SH'
#!/bin/sh
trap 'echo "warn-me: SIGUSR1 reached x=$1"; exit 3' USR1
echo "warn-me: started with x=$1"
while :; do sleep 1; done
SH
chmod 0755 "$CL/bin/warn-me"
cat >"$WORK/sw/ck-sweep.yml" <<'YAML'
type: sweep
trial:
  command: warn-me ${{search_space.x}}
  environment: {image: python}
  environment_variables: {BATCHAI_CHECKPOINTABLE: "true"}
sampling_algorithm: grid
search_space: {x: {type: choice, values: [7]}}
objective: {goal: minimize, primary_metric: loss}
limits: {max_total_trials: 1, trial_timeout: 120}
YAML
chown "$TEST_USER:" "$WORK/sw/ck-sweep.yml"
ck=$(as_user "PATH=$CL/bin:\$PATH batchai-job submit sw/ck-sweep.yml --parsable" </dev/null 2>&1) || fail "submit sw/ck-sweep.yml (a checkpointable trial): $ck"
# 6. hello-sweep: 4 trials, at most 2 at a time.
out=$(as_user "PATH=$CL/slowbin:$CL/bin:\$PATH PYTHONPATH=$CL/pylib batchai-job submit sweeps/hello-sweep.yml" </dev/null 2>&1) ||
    fail "batchai-job submit hello-sweep.yml: $out"
sid=$(sed -n 's/^Submitted sweep \([0-9]*\) (4 trials, at most 2 at a time, random sampling, seed [0-9]*)$/\1/p' <<<"$out")
[ -n "$sid" ] || fail "submit hello-sweep.yml: $out"
[ "$(job_field "$sid" ArrayTaskThrottle)" = 2 ] || fail "sweep $sid: ArrayTaskThrottle=$(job_field "$sid" ArrayTaskThrottle)"
out=$(bj "wait $sid --timeout 120") || fail "wait $sid: $out; $(bj "status $sid")"
json=$(bj "status $sid --json") || fail "status $sid --json: $json"
/usr/bin/python3 -c 'import json, sys, jsonschema
jsonschema.validate(json.loads(sys.argv[2]), json.load(open(sys.argv[1])))' \
    "$TOP/schemas/batchai-sweep-status.schema.json" "$json" || fail "sweep status --json against the schema: $json"
declare -a span=()
for i in 0 1 2 3; do span+=("$(epoch "${sid}_$i" StartTime) $(epoch "${sid}_$i" EndTime)"); done
/usr/bin/python3 - "$WORK/sweeps/hello-sweep/trial" "$json" "${span[@]}" <<'PY' || fail "sweep $sid: $json"
import glob, json, math, sys
base, o, spans = sys.argv[1], json.loads(sys.argv[2]), [tuple(map(int, s.split())) for s in sys.argv[3:]]
# At most 2 at once, and 2 at some time (starts and ends to the second: an end at t frees its slot at t).
most = max(sum(1 for s, e in spans if s <= t < e) for t in range(min(s for s, _ in spans), max(e for _, e in spans)))
assert most == 2, f"at most {most} trials ran at once: {spans}"
assert [t["executionState"] for t in o["trials"]] == ["succeeded"] * 4, o["trials"]
metrics = {}
for t in o["trials"]:
    d = f"{base}/{t['jobId']}"
    out = open(f"{d}/stdouterr/stdout.txt").read()
    assert f"B: {t['parameters']['B']}\n" in out and t["parameters"]["B"] in ("hello", "world", "hello_world"), (t, out)
    assert 0.1 <= float(t["parameters"]["C"]) <= 1.0, t
    files = glob.glob(f"{d}/outputs/mlruns/*/*/metrics/random_metric")
    assert len(files) == 1, files
    metrics[t["index"]] = float(open(files[0]).read().split()[1])
    assert math.isclose(t["metric"], metrics[t["index"]], rel_tol=1e-12), (t, metrics)  # cJSON prints 15 digits
best = min(metrics, key=metrics.get)
assert o["bestTrial"] == best, (o["bestTrial"], metrics)
print(f"sweep: best trial {best} of {metrics}")
PY
out=$(bj "status $sid") || fail "status $sid: $out"
grep -q "^best: *trial [0-3] (minimize random_metric)$" <<<"$out" || fail "status $sid names no best trial: $out"

# 7. A sweep as a pipeline step: tune (3 trials of x in 3 1 2, grid, at most 2 at a time; each writes
# model.txt and logs loss = x) -> use (cats tune's model). use must see the best trial's (x=1), status --json
# names it; with a metric no trial logs, the step fails saying so and use never runs.
install -d -o "$TEST_USER" "$WORK/sw"
cat >"$WORK/sw/trial.yml" <<'YAML'
type: command
inputs: {x: {type: integer}}
outputs: {model: {type: uri_folder}}
environment: {image: python}
command: >-
  python -c "import mlflow, sys; open(sys.argv[2] + '/model.txt', 'w').write('x=' + sys.argv[1]);
  mlflow.log_metric('loss', float(sys.argv[1]))" ${{inputs.x}} ${{outputs.model}}
YAML
cat >"$WORK/sw/tune.yml" <<'YAML'
type: pipeline
settings: {default_compute: azureml:cpu-cluster}
jobs:
  tune:
    type: sweep
    trial: ./trial.yml
    outputs: {model: {mode: rw_mount}}
    sampling_algorithm: grid
    search_space: {x: {type: choice, values: [3, 1, 2]}}
    objective: {goal: minimize, primary_metric: loss}
    limits: {max_total_trials: 3, max_concurrent_trials: 2}
  use:
    type: command
    component: {command: "cat ${{inputs.model}}/model.txt", inputs: {model: {type: uri_folder}}}
    inputs: {model: "${{parent.jobs.tune.outputs.model}}"}
YAML
sed 's/primary_metric: loss/primary_metric: nosuch/' "$WORK/sw/tune.yml" >"$WORK/sw/nometric.yml"
chown "$TEST_USER:" "$WORK"/sw/*.yml
sweep_pl() { as_user "PATH=$CL/bin:\$PATH PYTHONPATH=$CL/pylib batchai-job submit sw/$1 --parsable" </dev/null 2>&1; }
pw=$(sweep_pl tune.yml) || fail "submit sw/tune.yml: $pw"
pn=$(sweep_pl nometric.yml) || fail "submit sw/nometric.yml: $pn"
[ "$(job_field "$pw" ArrayTaskThrottle)" = 2 ] || fail "sweep step of $pw: ArrayTaskThrottle=$(job_field "$pw" ArrayTaskThrottle)"
out=$(bj "wait $pw --timeout 120") || fail "pipeline $pw: $out; $(bj "status $pw")"
json=$(bj "status $pw --json") || fail "status $pw --json: $json"
/usr/bin/python3 -c 'import json, sys, jsonschema
jsonschema.validate(json.loads(sys.argv[2]), json.load(open(sys.argv[1])))' \
    "$TOP/schemas/batchai-pipeline-status.schema.json" "$json" || fail "status --json of a sweep step against the schema: $json"
/usr/bin/python3 - "$WORK/sw/tune" "$json" <<'PY' || fail "sweep step of $pw: $json"
import json, sys
base, o = sys.argv[1], json.loads(sys.argv[2])
s = {x["name"]: x for x in o["steps"]}
t, sw = s["tune"], s["tune"]["sweep"]
assert o["executionState"] == "succeeded" and t["executionState"] == "succeeded", o
assert s["use"]["dependsOn"] == ["tune"], s["use"]
assert [x["parameters"]["x"] for x in sw["trials"]] == ["3", "1", "2"], sw["trials"]
assert [x["metric"] for x in sw["trials"]] == [3, 1, 2], sw["trials"]
assert sw["bestTrial"] == 1, sw
assert t["outputs"]["model"] == f"{base}/tune/{t['bestJobId']}/outputs/model", t
use = open(f"{base}/use/{s['use']['jobId']}/stdouterr/stdout.txt").read()
assert "x=1" in use, use
PY
rc=0
out=$(bj "stream $pw") || rc=$?
[ "$rc" = 2 ] && grep -qF "$pw is a pipeline whose first step, tune, is a sweep: give one of its trials, as ${pw}_0" <<<"$out" ||
    fail "stream of pipeline $pw (its first step a sweep) exited $rc without asking for a trial: $out"
out=$(bj "status $pw") || fail "status $pw: $out"
grep -q '^sweep tune: 3 trials (array [0-9]*), objective minimize loss; best: trial 1 (job [0-9]*, 1)$' <<<"$out" ||
    fail "status $pw does not name the sweep step's best trial: $out"
rc=0
out=$(bj "wait $pn --timeout 60") || rc=$?
[ "$rc" != 0 ] || fail "wait of a sweep step whose trials logged no metric exited 0: $out"
json=$(bj "status $pn --json") || true
best=$(/usr/bin/python3 -c 'import json, sys; s = json.loads(sys.argv[1])["steps"]; print(s[0]["bestJobId"], s[1]["jobId"])' "$json") ||
    fail "status $pn --json: $json"
grep -q "^sweep step tune: no trial logged the metric nosuch" "$WORK/sw/nometric/tune.best-${best% *}.txt" ||
    fail "the sweep step without its metric says no reason: $(cat "$WORK/sw/nometric/tune.best-${best% *}.txt")"
nodes=$(job_field "${best#* }" NodeList)
[ "$(job_field "${best#* }" JobState)" = CANCELLED ] && { [ -z "$nodes" ] || [ "$nodes" = "(null)" ]; } ||
    fail "the step after a sweep step without a best trial ran: $(scontrol -o show job "${best#* }")"
# 8. terminate of a pipeline whose sweep step runs: the running trial gets terminate's SIGTERM and its grace
# (its trap takes 6 s to save, longer than the cluster's KillWait of 5 s, after which a plain cancel kills it),
# the trial still queued and the step after the sweep never run.
cat >"$WORK/sw/stay.yml" <<'YAML'
type: command
inputs: {x: {type: integer}}
outputs: {model: {type: uri_folder}}
environment: {image: python}
command: >-
  sh -c 'trap "sleep 6; echo saved >$0/saved.txt; exit 3" TERM; touch $0/started; while :; do sleep 1; done' ${{outputs.model}}
YAML
sed 's,trial: ./trial.yml,trial: ./stay.yml,; s/values: \[3, 1, 2\]/values: [1, 2]/; s/max_total_trials: 3, max_concurrent_trials: 2/max_total_trials: 2, max_concurrent_trials: 1/' \
    "$WORK/sw/tune.yml" >"$WORK/sw/stay-pl.yml"
chown "$TEST_USER:" "$WORK"/sw/*.yml
pt=$(sweep_pl stay-pl.yml) || fail "submit sw/stay-pl.yml: $pt"
for ((i = 0; i < 300; i++)); do [ -n "$(find "$WORK/sw/stay-pl" -name started 2>/dev/null)" ] && break; sleep 0.1; done
started=$(find "$WORK/sw/stay-pl" -name started 2>/dev/null)
[ -n "$started" ] || fail "the sweep step's first trial did not start in 30 s: $(bj "status $pt")"
out=$(bj "terminate $pt --grace 20") || fail "terminate $pt: $out"
[ "$(cat "${started%/started}/saved.txt" 2>/dev/null)" = saved ] ||
    fail "terminate $pt: the running trial's TERM trap did not finish (no saved.txt beside $started): $out"
json=$(bj "status $pt --json") || true
/usr/bin/python3 - "$json" <<'PY' || fail "terminate $pt: $json"
import json, sys
o = json.loads(sys.argv[1])
s = {x["name"]: x for x in o["steps"]}
trials = s["tune"]["sweep"]["trials"]
# 22.05 keeps a record of the queued trial cancelled, 26.05 none: terminate recorded it
assert trials[1]["executionState"] == "cancelled" and trials[1]["exitCode"] is None, trials
assert s["use"]["executionState"] == "cancelled", s["use"]
# terminate stopped it: neither the sweep step nor the pipeline succeeded
assert s["tune"]["sweep"]["executionState"] == "cancelled", s["tune"]["sweep"]
assert o["executionState"] == "cancelled", o["executionState"]
PY
rc=0
out=$(bj "wait $pt --timeout 30") || rc=$?
[ "$rc" != 0 ] || fail "wait of a terminated pipeline with a sweep step exited 0: $out"
[ "$(find "$WORK/sw/stay-pl" -name started | wc -l)" = 1 ] || fail "terminate $pt: a second trial started: $(find "$WORK/sw/stay-pl" -name started)"
nodes=$(job_field "$(/usr/bin/python3 -c 'import json, sys; print(json.loads(sys.argv[1])["steps"][1]["jobId"])' "$json")" NodeList)
[ -z "$nodes" ] || [ "$nodes" = "(null)" ] || fail "terminate $pt: the step after the sweep ran on $nodes"
# 9, submitted before case 6.
bj "wait $ck --timeout 150" >/dev/null || true # fails: the trial is warned and exits 3, logging no metric
st=$(job_field "${ck}_0" JobState)
out=$(cat "$WORK/sw/ck-sweep/trial/$(job_field "${ck}_0" JobId)/stdouterr/stdout.txt" 2>&1)
[ "$st" = FAILED ] && [ "$(job_field "${ck}_0" ExitCode)" = 3:0 ] ||
    fail "sweep $ck: the checkpointable trial ended $st $(job_field "${ck}_0" ExitCode) (want FAILED 3:0: warned): $out"
grep -qx "warn-me: started with x=7" <<<"$out" && grep -qx "warn-me: SIGUSR1 reached x=7" <<<"$out" ||
    fail "sweep $ck: the checkpointable trial's program was not warned with its value: $out"
# 10. terminate of a sweep: its running trial terminated (its TERM trap exits 3), the queued one cancelled;
# status says the sweep was cancelled and exits 1, wait exits with the terminated trial's code.
cat >"$WORK/sw/stop-sweep.yml" <<'YAML'
type: sweep
trial:
  command: sh -c 'trap "exit 3" TERM; touch outputs/started; while :; do sleep 1; done'
  environment: {image: python}
sampling_algorithm: grid
search_space: {x: {type: choice, values: [1, 2]}}
objective: {goal: minimize, primary_metric: loss}
limits: {max_total_trials: 2, max_concurrent_trials: 1}
YAML
chown "$TEST_USER:" "$WORK/sw/stop-sweep.yml"
ss=$(sweep_pl stop-sweep.yml) || fail "submit sw/stop-sweep.yml: $ss"
for ((i = 0; i < 300; i++)); do [ -n "$(find "$WORK/sw/stop-sweep" -name started 2>/dev/null)" ] && break; sleep 0.1; done
[ -n "$(find "$WORK/sw/stop-sweep" -name started 2>/dev/null)" ] || fail "sweep $ss: its first trial did not start in 30 s: $(bj "status $ss")"
# The sweep's id names no one trial (Slurm would take the last started): stream, nodes, files, exec ask for one.
for c in stream nodes files "exec"; do
    rc=0
    out=$(bj "$c $ss$([ "$c" = exec ] && echo ' -- true')") || rc=$?
    [ "$rc" = 2 ] && grep -qF "$ss is a sweep of 2 trials, each a job of its own: give one, as ${ss}_0" <<<"$out" ||
        fail "$c of sweep $ss exited $rc without asking for a trial: $out"
done
out=$(bj "nodes ${ss}_0") || fail "nodes ${ss}_0 (a trial): $out"
out=$(bj "terminate $ss --grace 10") || fail "terminate $ss: $out"
rc=0
out=$(bj "wait $ss --timeout 30") || rc=$?
[ "$rc" = 3 ] || fail "wait of terminated sweep $ss exited $rc, want 3 (the terminated trial's code): $out"
rc=0
json=$(bj "status $ss --json") || rc=$?
[ "$rc" = 1 ] || fail "status of terminated sweep $ss exited $rc, want 1: $json"
/usr/bin/python3 - "$json" <<'PY' || fail "status of terminated sweep $ss: $json"
import json, sys
o = json.loads(sys.argv[1])
assert o["executionState"] == "cancelled", o["executionState"]
t = o["trials"]
assert t[0]["executionState"] == "terminated" and t[0]["exitCode"] == 3, t[0]
assert t[1]["executionState"] == "cancelled" and t[1]["exitCode"] is None, t[1]  # recorded by terminate on 26.05
PY
# A sweep terminated before any trial started (held): still a sweep to status (26.05 keeps no record of its
# tasks, only the array's), every trial cancelled, wait exits 1.
sh=$(sweep_pl "stop-sweep.yml --hold") || fail "submit sw/stop-sweep.yml --hold: $sh"
out=$(bj "terminate $sh") || fail "terminate $sh (held): $out"
rc=0
out=$(bj "wait $sh --timeout 30") || rc=$?
[ "$rc" = 1 ] || fail "wait of sweep $sh, terminated while held, exited $rc, want 1: $out"
json=$(bj "status $sh --json") || true
/usr/bin/python3 - "$json" <<'PY' || fail "status of sweep $sh, terminated while held: $json"
import json, sys
o = json.loads(sys.argv[1])
assert o["executionState"] == "cancelled", o
assert [t["executionState"] for t in o["trials"]] == ["cancelled", "cancelled"], o["trials"]
PY
# 11. A sweep of 300 trials, more than a job file's list may hold (256): submitted held; its last trial,
# released, runs with its own drawn value; terminate cancels the rest.
cat >"$WORK/sw/many.yml" <<'YAML'
type: sweep
trial:
  command: sh -c 'echo "x=$0" >outputs/x.txt' ${{search_space.x}}
  environment: {image: python}
sampling_algorithm: {type: random, seed: 3}
search_space: {x: {type: randint, upper: 1000000000}}
objective: {goal: minimize, primary_metric: loss}
limits: {max_total_trials: 300, max_concurrent_trials: 5}
YAML
chown "$TEST_USER:" "$WORK/sw/many.yml"
sm=$(sweep_pl "many.yml --hold") || fail "submit sw/many.yml (300 trials): $sm"
want=$(bj "status $sm --json" | /usr/bin/python3 -c 'import json, sys
t = json.load(sys.stdin)["trials"]; assert len(t) == 300, len(t); print(t[299]["parameters"]["x"])') ||
    fail "status of the 300-trial sweep $sm: $(bj "status $sm" | head -n 5)"
as_user "scontrol release ${sm}_299" </dev/null || fail "scontrol release ${sm}_299"
st=$(wait_job "${sm}_299" 60)
got=$(cat "$WORK/sw/many/trial/$(job_field "${sm}_299" JobId)/outputs/x.txt" 2>&1)
[ "$st" = COMPLETED ] && [ "$got" = "x=$want" ] || fail "trial 299 of sweep $sm ended $st with '$got', want x=$want"
out=$(bj "terminate $sm") || fail "terminate $sm: $out"
assert_nodes_idle
pass "a sweep of 300 trials ran its last with its own value; stream, nodes, files and exec of a sweep's id (or a pipeline's that is a sweep's) ask for a trial; terminate of a sweep: cancelled (also while held: its trials cancelled, not unknown), wait exits with the terminated trial's code; a checkpointable sweep trial ran exec'd with its value and got Slurm's warning; terminate of a pipeline gave its running sweep trial SIGTERM and the grace; a sweep step gave the next step its best trial's output (and, without its metric, stopped it saying why); hello-sweep ran 4 trials at most 2 at a time and named the best; terminate stopped a pipeline; 3a, 1a, 3b ran in order, each step reading the last's output; status --json matches its schema; a failed step stopped the rest (wait exit 3), or not under continue_on_step_failure; a failed third sbatch cancelled the first two; sbatch refused a pipeline"
