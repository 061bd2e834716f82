#!/usr/bin/env bash
# Azure ML pipelines: `batchai-job validate` gives a verdict on every pipeline of Azure's basics
# ($shared/reference/azureml/pipelines/basics, 16 folders, 17 files) on a site that maps their computes, the
# environments it can run on the host, and 1b's registered components; the verdicts are the reviewed list in
# pipeline_basics.golden (UPDATE_GOLDEN=1 rewrites it: review the diff). Then the graph's own refusals, each
# with its YAML path (pipelines/*.yml: a cycle, an unknown step, a type mismatch, a step kind Slurm cannot run,
# an unmapped registered component), a nested pipeline component, translate's chaining of outputs, and a
# sweep as a pipeline step.
# run-tests: parallel
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bin=$PWD/$BUILD/san/bin/batchai-job
shared=${SHARED_DIR:-$PWD/../shared}
basics=$shared/reference/azureml/pipelines/basics
here=$PWD/tests/jobfile
[ -d "$basics" ] || { echo "SKIP(shared): no $basics (set SHARED_DIR)"; exit 77; }
[ -x "$bin" ] || { echo "FAIL: $bin is not built"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib/assert.bash
cp -r "$basics" "$T/basics"
b1=$T/basics/1b_e2e_registered_components
cat >"$T/site.conf" <<CONF
container_runtime=none
cluster.cpu-cluster=debug
cluster.gpu-cluster=debug
environment.python=host
environment.docker.io/python=host
environment.azureml://registries/azureml/environments/sklearn-1.5/labels/latest=host
component.azureml:my_train@latest=$b1/train.yml
component.azureml:my_score@latest=$b1/score.yml
component.azureml:my_eval@latest=$b1/eval.yml
CONF
got=$T/got
n=0
for f in "$T"/basics/*/pipeline*.yml; do
    (cd "$T/basics" && "$bin" --settings "$T/site.conf" --no-host validate "${f#"$T"/basics/}") >>"$got" 2>&1
    n=$((n + 1))
done
[ "$n" = 17 ] || fail "expected the 17 pipeline files of the 16 basics, found $n"
sed -i "s|$T|@|g" "$got"
if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
    cp "$got" "$here/pipeline_basics.golden"
fi
diff -u "$here/pipeline_basics.golden" "$got" || fail "the verdicts on the basics differ from pipeline_basics.golden"
valid=$(grep -c ': valid (Azure ML pipeline' "$got")

# The graph's refusals, each with its path.
cp "$here"/pipelines/*.yml "$T/basics/3b_pipeline_with_data/"
cd "$T/basics/3b_pipeline_with_data"
expect_fault() { # FILE TEXT
    local out
    out=$("$bin" --settings "$T/site.conf" --no-host validate "$1" 2>&1) && fail "$1 was accepted: $out"
    grep -qF -- "$2" <<<"$out" || fail "$1: expected \"$2\" in: $out"
}
expect_fault cycle.yml 'cycle.yml: jobs.b.inputs: a cycle: a -> c -> b -> a'
expect_fault long_name.yml "...\": a step name has at most 64 letters"
expect_fault unknown_step.yml 'unknown_step.yml: jobs.b.inputs.component_b_input: ${{parent.jobs.nosuch.outputs.component_a_output}}: the pipeline has no step "nosuch"'
expect_fault mismatch.yml 'mismatch.yml: jobs.b.inputs.component_b_input: type mismatch: a value where the input is data (uri_folder)'
expect_fault mismatch.yml 'mismatch.yml: jobs.a.inputs.component_a_input: type mismatch: data (uri_folder) where the input is a integer'
expect_fault automl.yml 'automl.yml: jobs.classify.type: "automl": a step of this kind needs Azure'"'"'s own services'
expect_fault automl.yml 'automl.yml: jobs.copy.type: "data_transfer"'
out=$("$bin" --settings "$T/site.conf" --no-host validate automl.yml 2>&1)
grep -q 'jobs.a' <<<"$out" &&
    fail "automl.yml: the command step a, which is valid, got a fault"
expect_fault registered.yml 'registered.yml: jobs.a.component: the registered component "azureml:nosuch:3" is not mapped on this site'
# A nested pipeline component: its steps are OUTER.INNER, chained to the outer steps.
out=$("$bin" --settings "$T/site.conf" --no-host validate nested.yml 2>&1) || fail "nested.yml: $out"
[ "$out" = "nested.yml: valid (Azure ML pipeline, 4 steps)" ] || fail "nested.yml: $out"
script=$("$bin" --settings "$T/site.conf" --no-host translate nested.yml 2>&1) || fail "translate nested.yml: $script"
grep -q '^# ---- step inner.b .*after: inner.a; sbatch --dependency=afterok' <<<"$script" ||
    fail "translate nested.yml: inner.b is not after inner.a: $(grep '^# ----' <<<"$script")"
grep -q '^# ---- step last .*after: inner.b;' <<<"$script" ||
    fail "translate nested.yml: last is not after inner.b: $(grep '^# ----' <<<"$script")"
# The consumer's input is the producer's output directory (job id 0 until it is submitted).
base=$T/basics/3b_pipeline_with_data/nested
grep -qxF "#   AZURE_ML_INPUT_component_c_input=$base/inner.b/0/outputs/component_b_output" <<<"$script" ||
    fail "translate nested.yml: last does not read inner.b's output: $(grep -F AZURE_ML_INPUT <<<"$script")"
# The pipeline's own 3b: afterany under continue_on_step_failure.
sed 's/^settings:/settings:\n  continue_on_step_failure: true/' pipeline.yml >cont.yml
script=$("$bin" --settings "$T/site.conf" --no-host translate cont.yml 2>&1) || fail "translate cont.yml: $script"
grep -q '^# ---- step component_b .*after: component_a; sbatch --dependency=afterany' <<<"$script" ||
    fail "cont.yml: continue_on_step_failure does not give afterany"

# A sweep as a pipeline step (sweep_step.yml: prep -> tune, a sweep of sweep_trial.yml -> use): one job array
# after prep, its search-space parameters the trial's inputs of their names, and use after it, reading the
# output of the job that picks the best trial (job id 0 until submitted).
out=$("$bin" --settings "$T/site.conf" --no-host validate sweep_step.yml 2>&1) || fail "sweep_step.yml: $out"
[ "$out" = "sweep_step.yml: valid (Azure ML pipeline, 3 steps)" ] || fail "sweep_step.yml: $out"
script=$("$bin" --settings "$T/site.conf" --no-host translate sweep_step.yml 2>&1) || fail "translate sweep_step.yml: $script"
grep -q '^# ---- step tune .*after: prep; sbatch --dependency=afterok' <<<"$script" ||
    fail "sweep_step.yml: tune is not after prep: $(grep '^# ----' <<<"$script")"
grep -q '^# a sweep: sbatch --array=0-3%2 .*sbatch --dependency=afterany:<the array> batchai-job sweep-best' <<<"$script" ||
    fail "sweep_step.yml: no --array=0-3%2 and best-trial job for tune: $(grep '^# ' <<<"$script" | head -n 20)"
grep -q '^# ---- step use .*after: tune; sbatch --dependency=afterok' <<<"$script" ||
    fail "sweep_step.yml: use is not after tune: $(grep '^# ----' <<<"$script")"
base=$T/basics/3b_pipeline_with_data/sweep_step
grep -qxF "#   AZURE_ML_INPUT_component_c_input=$base/tune/0/outputs/model" <<<"$script" ||
    fail "sweep_step.yml: use does not read tune's model: $(grep -F AZURE_ML_INPUT <<<"$script")"
grep -qxF "#   AZURE_ML_INPUT_data=$base/prep/0/outputs/component_a_output" <<<"$script" ||
    fail "sweep_step.yml: tune's trials do not read prep's output: $(grep -F AZURE_ML_INPUT <<<"$script")"
grep -qF "print(sys.argv)'\\'' \${AZURE_ML_INPUT_data} 3 \${AZUREML_SWEEP_lr} \${AZUREML_SWEEP_kernel} " <<<"$script" ||
    fail "sweep_step.yml: the trial's command does not take lr and kernel from the search space: $(grep -F sys.argv <<<"$script")"
[ "$(grep -c '^[0-3]) AZUREML_SWEEP_lr=.* AZUREML_SWEEP_kernel=.* ;;$' <<<"$script")" = 4 ] ||
    fail "sweep_step.yml: not 4 trials with lr and kernel: $(grep AZUREML_SWEEP <<<"$script")"
grep -q '^#SBATCH --time=00:02:00$' <<<"$script" || fail "sweep_step.yml: trial_timeout 120 is not each trial's time"
# A checkpointable trial (BATCHAI_CHECKPOINTABLE) in a sweep step: its one command is exec'd after the values
# are set, so terminate's SIGTERM reaches the program.
sed 's/^environment: {image: python}$/&\nenvironment_variables: {BATCHAI_CHECKPOINTABLE: "true"}/' sweep_trial.yml >ck_trial.yml
sed 's|trial: ./sweep_trial.yml|trial: ./ck_trial.yml|' sweep_step.yml >ck_step.yml
grep -q BATCHAI_CHECKPOINTABLE ck_trial.yml && grep -q ck_trial ck_step.yml || fail "ck_step.yml: the sed did not apply"
script=$("$bin" --settings "$T/site.conf" --no-host translate ck_step.yml 2>&1) || fail "translate ck_step.yml: $script"
grep '^exec ' <<<"$script" | grep -qF "exec python -c '\\''import sys; print(sys.argv)'\\'' \${AZURE_ML_INPUT_data} 3 \${AZUREML_SWEEP_lr} " ||
    fail "ck_step.yml: the checkpointable trial's command is not exec'd: $(grep -F sys.argv <<<"$script")"
expect_fault sweep_step_bad.yml 'sweep_step_bad.yml: jobs.tune.search_space.nosuch: the trial declares no input "nosuch"'
expect_fault sweep_step_bad.yml 'sweep_step_bad.yml: jobs.tune.outputs.model: a sweep step'"'"'s output is its best trial'"'"'s'
expect_fault sweep_step_bad.yml 'sweep_step_bad.yml: jobs.tune: early_termination: not applied here'
expect_fault sweep_step_bad.yml 'sweep_step_bad.yml: jobs.tune: sampling_algorithm: "bayesian": not run here'

# Sweeps: Azure's hello-sweep validates; every expression of the search space draws values of its form,
# the same for the same seed; grid is the product in order; bayesian and early_termination are refused.
cp -r "$shared/reference/azureml/sweeps" "$T/sweeps"
chmod -R u+w "$T/sweeps"
cp "$here"/pipelines/sweep_*.yml "$T/sweeps/"
cd "$T/sweeps"
echo 'environment.azureml:AzureML-sklearn-1.5@latest=host' >>"$T/site.conf"
out=$("$bin" --settings "$T/site.conf" --no-host validate hello-sweep.yml 2>&1) || fail "hello-sweep.yml: $out"
[ "$out" = "hello-sweep.yml: valid (Azure ML sweep, 4 trials, at most 2 at a time, random sampling)" ] ||
    fail "hello-sweep.yml: $out"
# A checkpointable trial: valid, its one command exec'd; a trial of two commands is refused, naming the trial's command.
sed 's/^  environment: azureml:.*$/&\n  environment_variables: {BATCHAI_CHECKPOINTABLE: "true"}/' hello-sweep.yml >ck.yml
grep -q BATCHAI_CHECKPOINTABLE ck.yml || fail "ck.yml: the sed did not apply"
out=$("$bin" --settings "$T/site.conf" --no-host validate ck.yml 2>&1) || fail "ck.yml (checkpointable hello-sweep): $out"
out=$("$bin" --settings "$T/site.conf" --no-host translate ck.yml 2>&1) || fail "translate ck.yml: $out"
grep -qxF 'exec python hello-sweep.py --A 0.5 --B ${AZUREML_SWEEP_B} --C ${AZUREML_SWEEP_C}'"' &" <<<"$out" ||
    fail "ck.yml: the checkpointable trial's command is not exec'd: $(grep -F hello-sweep.py <<<"$out")"
sed 's/^    python hello-sweep.py$/    python prepare.py;/' ck.yml >ck_two.yml
expect_fault ck_two.yml "ck_two.yml: trial: command: a checkpointable step's command is exec'd, so it must be one command: found ';'"
one=$("$bin" --settings "$T/site.conf" --no-host translate sweep_all.yml 2>&1) || fail "translate sweep_all.yml: $one"
two=$("$bin" --settings "$T/site.conf" --no-host translate sweep_all.yml 2>&1) || fail "translate sweep_all.yml: $two"
[ "$one" = "$two" ] || fail "sweep_all.yml: the same seed drew different trials"
grep -q '^# sbatch --array=0-49%5 ' <<<"$one" || fail "sweep_all.yml: no --array=0-49%5: $(head -n 3 <<<"$one")"
grep -q '^#SBATCH --time=00:01:00$' <<<"$one" || fail "sweep_all.yml: trial_timeout 60 is not --time=00:01:00: $(grep -e --time <<<"$one")"
/usr/bin/python3 - <<'PY' "$one" || fail "sweep_all.yml: a drawn value is not of its expression's form"
import math, re, sys
rows = re.findall(r"^(\d+)\) (.*) ;;$", sys.argv[1], re.M)
assert len(rows) == 50, len(rows)
vals = {}
for i, row in rows:
    for k, v in re.findall(r"AZUREML_SWEEP_(\w+)='\\''([^']*)'\\''", row):
        vals.setdefault(k, []).append(v)
assert all(len(v) == 50 for v in vals.values()) and len(vals) == 10, {k: len(v) for k, v in vals.items()}
f = {k: [float(x) for x in v] for k, v in vals.items() if k != "c"}
assert set(vals["c"]) <= {"1", "two", "3.5"} and len(set(vals["c"])) == 3, vals["c"]
assert all(x in (0, 1, 2, 3, 4) for x in f["r"]) and len(set(f["r"])) == 5, f["r"]
assert all(0.5 <= x <= 2 for x in f["u"]), f["u"]
assert all(x % 2 == 0 and 0 <= x <= 10 for x in f["qu"]), f["qu"]
assert all(math.exp(-3) <= x <= math.exp(1) for x in f["lu"]), f["lu"]
assert all(abs(x / 0.5 - round(x / 0.5)) < 1e-9 for x in f["qlu"]), f["qlu"]
assert all(abs(x - 10) < 0.01 for x in f["n"]) and len(set(f["n"])) > 40, f["n"]
assert all(x % 5 == 0 for x in f["qn"]) and 80 < sum(f["qn"]) / 50 < 120, f["qn"]
assert all(abs(x - 1) < 0.01 for x in f["ln"]), f["ln"]
assert all(x % 3 == 0 and x >= 0 for x in f["qln"]), f["qln"]
PY
grid=$("$bin" --settings "$T/site.conf" --no-host translate sweep_grid.yml 2>&1) || fail "translate sweep_grid.yml: $grid"
got=$(/usr/bin/python3 -c 'import re, sys
print(" ".join(f"{i}:{a}{b}" for i, a, b in re.findall(r"^(\d)\) AZUREML_SWEEP_a=\W+(\w)\W+ AZUREML_SWEEP_b=\W+(\w)\W+ ;;$", sys.argv[1], re.M)))' "$grid")
[ "$got" = "0:x1 1:x2 2:x3 3:y1 4:y2" ] || fail "sweep_grid.yml: trials $got"
expect_fault sweep_refused.yml 'sweep_refused.yml: sampling_algorithm: "bayesian": not run here'
expect_fault sweep_refused.yml 'sweep_refused.yml: early_termination: not applied here'
expect_fault sweep_faults.yml 'sweep_faults.yml: objective.goal: "minimise": expected minimize or maximize'
expect_fault sweep_faults.yml 'sweep_faults.yml: trial.comand: unknown property'
expect_fault sweep_unknown.yml 'sweep_unknown.yml: trial.command: ${{search_space.nosuch}}: the search space has no nosuch'
echo "PASS: $n basics' verdicts as reviewed ($valid valid); cycle, unknown step, type mismatch, automl/data_transfer, unmapped component refused with their paths; a nested pipeline chained; a sweep step an array between its neighbours (a checkpointable trial exec'd), its faults refused; hello-sweep valid (checkpointable too, its command exec'd), every search-space expression drawn in its form and seeded, grid in order, bayesian and early_termination refused, a sweep's and its trial's faults in one round"
