#!/usr/bin/env bash
# Azure ML pipelines: `batchai-job validate` gives a verdict on every pipeline of Azure's basics
# ($shared/reference/azureml/pipelines/basics, 16 folders, 17 files) on a site that maps their computes, the
# environments it can run on the host, and 1b's registered components; the verdicts are the reviewed list in
# pipeline_basics.golden (UPDATE_GOLDEN=1 rewrites it: review the diff). Then the graph's own refusals, each
# with its YAML path (pipelines/*.yml: a cycle, an unknown step, a type mismatch, a step kind Slurm cannot run,
# an unmapped registered component), a nested pipeline component, and translate's chaining of outputs.
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
fail() { echo "FAIL: $*"; exit 1; }
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
echo "PASS: $n basics' verdicts as reviewed ($valid valid); cycle, unknown step, type mismatch, automl/data_transfer, unmapped component refused with their paths; a nested pipeline chained"
