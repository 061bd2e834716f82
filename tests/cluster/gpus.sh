#!/usr/bin/env bash
# GPUs through Slurm on the two-node cluster with stand-in GPUs (localcluster --gpus: two device nodes of
# NVIDIA's major 195 per node, gres.conf AutoDetect=off, Gres=gpu:2; no driver answers them, so opening one
# a task may use fails with ENXIO and one its devices cgroup denies with EPERM). The site maps the job's
# cluster and Azure ML compute "gpucl" to the partition with gpus.gpucl=2.
#   nocl.json a job.json without cluster.id given its cluster on the command line (batchai-job submit
#             --cluster gpucl): the same GPUs per rank; sbatch --batchai-cluster unlike the file's refused.
#   job.json  2 nodes x 2 ranks: the script asks --gpus-per-node=2 and the ranks --gpus-per-task=1; every
#             task has a CUDA_VISIBLE_DEVICES of its own on its node, AZ_BATCHAI_NUM_GPUS and LOCAL_RANK.
#   one.json  one task submitted with --gpus-per-node=1: AZ_BATCHAI_NUM_GPUS is Slurm's 1, not the site's 2.
#   aml.yml   the same through an Azure ML command job (compute azureml:gpucl, 2 processes per instance).
#   cifar-train  given a stand-in GPU it cannot open: the job fails with exit 5 and the refusal in stderr.txt.
#   Under the cgroup pass (ConstrainDevices=yes): each task opens its own stand-in GPU and no other.
#   Refused by sbatch, by name: 3 ranks per node on nodes of 2 GPUs; a cluster the site does not map.
#   check-site: the promised GPUs against the nodes; a wrong promise exits 1 naming each node.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gpulib.bash"
CLUSTER_OPTS=(--gpus)
cluster_start "cluster.gpucl=debug gpus.gpucl=2 mpi=none"

gpu_probe

CLUSTER_ID=/subscriptions/0/resourceGroups/rg/providers/Microsoft.BatchAI/workspaces/ws/clusters
gpu_job() { # FILE CLUSTER PROCESSES
    write_job "$1" <<JSON
{"properties": {"nodeCount": 2, "cluster": {"id": "$CLUSTER_ID/$2"},
  "customMpiSettings": {"commandLine": "$WORK/probe.sh", "processCount": $3},
  $LOGS_JSON, $MOUNT_JSON}}
JSON
}

# 1. job.json: 2 nodes x 2 ranks on the mapped cluster.
gpu_job gpus.json gpucl 4
as_user "batchai-job translate gpus.json" >"$CL/gpus.script" 2>&1 || true
id=$(submit --batchai-job=gpus.json)
st=$(wait_job "$id")
out=$(log_dir "$id" gpus)/stdout.txt
[ "$st" = COMPLETED ] || fail "job.json: job $id ended $st: $(cat "$out" "$(log_dir "$id" gpus)/stderr.txt" 2>&1)"
scontrol write batch_script "$id" "$CL/gpus.stored" >/dev/null
grep -qx '#SBATCH --gpus-per-node=2' "$CL/gpus.stored" || fail "job.json: the script asks for no GPUs"
check_tasks "$out" "job.json, 2 nodes x 2 ranks"

# 1a. The tutorial's own command line (az batchai job create --cluster nc6cluster): its job.json names no
# cluster, and `batchai-job submit FILE --cluster NAME` (sbatch --batchai-cluster=NAME) chooses it as
# cluster.id does: the partition and a GPU of its own for every rank. A file that names another cluster is
# refused by sbatch, naming both.
install -m 0755 "$BUILD/bin/batchai-job" "$CL/batchai-job" # the user may not reach the build tree
write_job nocl.json <<JSON
{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "$WORK/probe.sh", "processCount": 4},
  $LOGS_JSON, $MOUNT_JSON}}
JSON
id=$(as_user "$CL/batchai-job submit nocl.json --cluster gpucl --parsable" </dev/null 2>&1) ||
    fail "batchai-job submit --cluster gpucl: $id"
id=${id%%;*}
st=$(wait_job "$id")
out=$(log_dir "$id" nocl)/stdout.txt
[ "$st" = COMPLETED ] || fail "--cluster: job $id ended $st: $(cat "$out" "$(log_dir "$id" nocl)/stderr.txt" 2>&1)"
[ "$(job_field "$id" Partition)" = debug ] || fail "--cluster gpucl: partition $(job_field "$id" Partition), want debug"
check_tasks "$out" "a job.json without cluster.id, batchai-job submit --cluster gpucl"
err=$(as_user "sbatch --batchai-cluster=othercl --batchai-job=gpus.json" 2>&1) &&
    fail "sbatch accepted --batchai-cluster=othercl for a file whose cluster.id is gpucl"
grep -q 'properties.cluster.id: the file names cluster "gpucl", but --cluster names "othercl"' <<<"$err" ||
    fail "a --batchai-cluster unlike the file's cluster.id refused without naming both: $err"

# 1b. AZ_BATCHAI_NUM_GPUS is what Slurm allocated on the node, not the site's figure: one task asking
# --gpus-per-node=1 on the sbatch line (which wins over the script's 2) is told 1.
write_job one.json <<JSON
{"properties": {"nodeCount": 1, "cluster": {"id": "$CLUSTER_ID/gpucl"},
  "customToolkitSettings": {"commandLine": "$WORK/probe.sh"}, $LOGS_JSON, $MOUNT_JSON}}
JSON
id=$(submit --gpus-per-node=1 --batchai-job=one.json)
st=$(wait_job "$id")
out=$(log_dir "$id" one)/stdout.txt
[ "$st" = COMPLETED ] || fail "one task: job $id ended $st: $(cat "$out" "$(log_dir "$id" one)/stderr.txt" 2>&1)"
grep -q '^GPU-TASK rank=0 .* cvd=0 num=1 ' "$out" || fail "one task given 1 GPU of the site's 2: $(cat "$out")"
echo "one task, sbatch --gpus-per-node=1:"; sed 's/^/    /' "$out"

# 1c. cifar-train in a job given a GPU it cannot open (the stand-in has no driver behind it) stops at start
# naming the GPU Slurm gave it, exit 5, instead of training on the CPU; the job fails with that code.
trainer=$BUILD/bin/cifar-train
DATA=${CIFAR10_DIR:-$TOP/../shared/data/cifar-10-batches-bin-subset}
if [ -x "$trainer" ] && [ -f "$DATA/test_batch.bin" ]; then
    install -d -m 0755 "$CL/bin"
    install -m 0755 "$trainer" "$CL/bin/cifar-train"
    # With its CUDA library where a node installs it, the reason is the GPU itself, not a missing library.
    if [ -f "$BUILD/lib/libcifar_train_cuda.so" ]; then
        install -d -m 0755 "$CL/lib"
        install -m 0644 "$BUILD/lib/libcifar_train_cuda.so" "$CL/lib/"
    fi
    write_job train.json <<JSON
{"properties": {"nodeCount": 1, "cluster": {"id": "$CLUSTER_ID/gpucl"},
  "customToolkitSettings": {"commandLine": "$CL/bin/cifar-train --data $DATA --epochs 1 --limit-train 32 --limit-test 32 --threads 1 --dir $WORK/train-out"},
  $LOGS_JSON, $MOUNT_JSON}}
JSON
    id=$(submit --gpus-per-node=1 --batchai-job=train.json)
    st=$(wait_job "$id")
    err=$(log_dir "$id" train)/stderr.txt
    [ "$st" = FAILED ] || fail "cifar-train given an unusable GPU: job $id ended $st, want FAILED: $(cat "$err" 2>&1)"
    [ "$(job_field "$id" ExitCode)" = 5:0 ] || fail "cifar-train given an unusable GPU: exit code $(job_field "$id" ExitCode), want 5:0"
    grep -q 'cifar-train: this process was given a GPU (CUDA_VISIBLE_DEVICES=0, .*SLURM_GPUS_ON_NODE=1, AZ_BATCHAI_NUM_GPUS=1) but cannot use it: .*stopping instead of training on the CPU' "$err" ||
        fail "cifar-train given an unusable GPU did not say so in $err: $(cat "$err")"
    [ ! -e "$WORK/train-out" ] || [ -z "$(ls -A "$WORK/train-out")" ] || fail "cifar-train wrote $(ls "$WORK/train-out")"
    echo "cifar-train given an unusable GPU:"; grep 'given a GPU' "$err" | sed 's/^/    /'
else
    echo "cifar-train or the CIFAR-10 subset is absent: its GPU refusal is checked by tests/trainer/test_gpu_given.sh alone"
fi

# 2. Azure ML: compute azureml:gpucl, 2 instances x 2 processes.
write_job aml.yml <<YAML
command: $WORK/probe.sh
compute: azureml:gpucl
distribution:
  type: mpi
  process_count_per_instance: 2
resources:
  instance_count: 2
limits:
  timeout: 300
YAML
id=$(submit --batchai-job=aml.yml)
st=$(wait_job "$id")
out=$WORK/aml/$id/stdouterr/stdout.txt
[ "$st" = COMPLETED ] || fail "Azure ML: job $id ended $st: $(cat "$out" "$WORK/aml/$id/stdouterr/stderr.txt" 2>&1)"
check_tasks "$out" "Azure ML, 2 instances x 2 processes"

# 3. Refused at submission, by name: more ranks per node than GPUs, and a cluster the site does not map.
gpu_job many.json gpucl 6
err=$(as_user "sbatch --batchai-job=many.json" 2>&1) && fail "sbatch accepted 3 ranks per node on nodes of 2 GPUs"
grep -q 'properties.customMpiSettings.processCount: processCount 6 over nodeCount 2 is up to 3 ranks per node' <<<"$err" ||
    fail "3 ranks per node refused without naming processCount: $err"
gpu_job other.json othercl 4
err=$(as_user "sbatch --batchai-job=other.json" 2>&1) && fail "sbatch accepted a cluster the site does not map"
grep -q 'properties.cluster.id: cluster "othercl" is not mapped .* cluster.othercl=PARTITION' <<<"$err" ||
    fail "an unmapped cluster refused without naming it: $err"
[ -z "$(squeue -h)" ] || fail "a refused job was queued: $(squeue)"
# 4. check-site, as an admin runs it: the GPUs the site promises are the nodes'; a promise of more GPUs, or
# of a type the nodes do not have, exits 1 naming each node.
install -d -m 0755 "$CL/images"
line=$(cat "$CL/plugstack.conf")
check_site() { # WANT_STATUS
    local rc=0
    (cd "$WORK" && "$BUILD/bin/batchai-job" check-site -p debug) >"$CL/check-site.out" 2>&1 || rc=$?
    [ "$rc" = "$1" ] || fail "check-site exited $rc, want $1: $(cat "$CL/check-site.out")"
}
check_site 0
assert_grep "^ok   GresTypes=gpu has gpu" "$CL/check-site.out"
assert_grep "^ok   gpus.gpucl: every node of partition debug has 2 GPU(s)" "$CL/check-site.out"
if [ "$CONSTRAINED" = 1 ]; then assert_grep "^ok   ConstrainDevices=yes" "$CL/check-site.out"
else assert_grep "^warn ConstrainDevices=.*: any job can open every GPU of its node" "$CL/check-site.out"; fi
for promise in gpus.gpucl=3 gpus.gpucl=a100:2; do
    echo "${line/gpus.gpucl=2/$promise}" >"$CL/plugstack.conf"
    check_site 1
    for n in n1 n2; do
        assert_grep "^FAIL node $n of partition debug has .* but gpus.gpucl promises" "$CL/check-site.out"
    done
done
echo "$line" >"$CL/plugstack.conf"
grep '^\(ok  \|warn\|FAIL\) .*\(GPU\|Gres\|ConstrainDevices\|oci\)' "$CL/check-site.out"

pass "each task its own GPU (job.json and Azure ML)$([ "$CONSTRAINED" = 1 ] && echo ", devices cgroup per task"); too many GPUs and an unmapped cluster refused by name"
