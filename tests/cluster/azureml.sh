#!/usr/bin/env bash
# Azure ML command jobs (YAML) through the same door as job.json: `sbatch --batchai-job=job.yml`, no script,
# submitted by an unprivileged user on the two-node cluster.
#   torch.yml   the shape of Azure's single-step/pytorch/cifar-distributed job (distribution: pytorch),
#               2 nodes x 2 processes: Debian's torch.distributed over gloo, env:// rendezvous from the
#               MASTER_ADDR/PORT, WORLD_SIZE, RANK the translation sets, all_reduce across the 4 ranks;
#               LOCAL_RANK and NODE_RANK as Azure ML sets them; a literal input substituted; an input of
#               mode download copied to each node's job temp; an output of mode upload copied back.
#   cifar.yml   the bundled cifar-train under distribution: mpi (srun --mpi=pmix), 2 nodes x 1 process,
#               its data an input in a datastore (the site's share "myshare"), its model an output there.
#   refused.yml services: sbatch refuses it, naming the field; nostore.yml: a datastore without a share.
# batchai-job validate, translate, submit, status, files and stream take the YAML too.
. "$(dirname "$0")/lib.sh"
TRAINER=$BUILD/bin/cifar-train
DATA=${CIFAR10_DIR:-$TOP/../shared/data/cifar-10-batches-bin-subset}
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "python3-torch is not installed (contrib/install-deps.sh)"
[ -x "$TRAINER" ] || skip "$TRAINER is not built"
[ -f "$DATA/test_batch.bin" ] || skip_for shared "no CIFAR-10 data at $DATA (set CIFAR10_DIR)"
cluster_start
srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix MPI plugin here"
ADDR=$(scontrol -o show node n1 | sed -n 's/.* NodeAddr=\([^ ]*\) .*/\1/p')
install -d -o "$TEST_USER" "$WORK/src" "$WORK/data"
install -o "$TEST_USER" -m 0644 "$TOP/tests/cluster/toolkits/torch_allreduce.py" "$WORK/src/"
echo "downloaded input" >"$WORK/data/hello.txt"
chown "$TEST_USER:" "$WORK/data/hello.txt"

# 1. PyTorch, 2 nodes x 2 processes.
write_job torch.yml <<'YAML'
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
code: src
command: >-
  cat ${{inputs.data}}/hello.txt &&
  echo "rank $RANK" > ${{outputs.ranks}}/rank-$RANK.txt &&
  echo "rank $RANK" > ./outputs/cwd-$RANK.txt && echo "log $RANK" > ./logs/log-$RANK.txt &&
  /usr/bin/python3 torch_allreduce.py --world-size ${{inputs.world}}
inputs:
  world: 4
  data:
    type: uri_folder
    path: data
    mode: download
outputs:
  ranks:
    type: uri_folder
    mode: upload
environment_variables:
  PYTHONDONTWRITEBYTECODE: "1"
  OMP_NUM_THREADS: 1
distribution:
  type: pytorch
  process_count_per_instance: 2
resources:
  instance_count: 2
limits:
  timeout: 300
display_name: pytorch-allreduce
YAML
install -m 0755 "$BUILD/bin/batchai-job" "$CL/batchai-job" # the user may not reach the build tree
out=$(as_user "$CL/batchai-job validate torch.yml") || fail "batchai-job validate torch.yml: $out"
[ "$out" = "torch.yml: valid (Azure ML command job, 2 nodes)" ] || fail "batchai-job validate torch.yml: $out"
# The script whole first: grep -q stops reading at its match, and the writer's broken pipe would fail the test.
script=$(as_user "$CL/batchai-job translate torch.yml") || fail "batchai-job translate torch.yml: $script"
grep -q '^#SBATCH --ntasks-per-node=2$' <<<"$script" || fail "batchai-job translate torch.yml has no --ntasks-per-node=2"
out=$(as_user "$CL/batchai-job submit torch.yml --parsable" </dev/null 2>&1) || fail "batchai-job submit: $out"
id=${out%%;*}
st=$(wait_job "$id" 180)
logs=$WORK/torch/$id/stdouterr
[ "$st" = COMPLETED ] || fail "torch.yml: job $id ended $st: $(tail -n 20 "$logs/stderr.txt" 2>&1)"
[ "$(job_field "$id" NumTasks)" = 4 ] || fail "torch.yml: job $id has $(job_field "$id" NumTasks) tasks, expected 4"
for r in 0 1 2 3; do
    node=n$((r / 2 + 1)) local=$((r % 2))
    assert_grep "rank $r of 4 backend gloo init env://$ADDR sum 10.0 on $node local_rank $local node_rank $((r / 2))" \
        "$logs/stdout.txt"
    assert_file "$WORK/torch/$id/outputs/ranks/rank-$r.txt"
    # Azure ML's ./outputs and ./logs in the working directory (beside the code), kept as the job's.
    assert_grep "rank $r" "$WORK/torch/$id/outputs/cwd-$r.txt"
    assert_grep "log $r" "$WORK/torch/$id/logs/log-$r.txt"
done
[ ! -e "$WORK/src/outputs" ] && [ ! -e "$WORK/src/logs" ] || fail "torch.yml: ./outputs or ./logs was made in the code directory"
[ "$(grep -c '^downloaded input$' "$logs/stdout.txt")" = 4 ] || fail "torch.yml: the downloaded input was not read by 4 ranks"
out=$(as_user "$CL/batchai-job status $id")
grep -q '^executionState: *succeeded$' <<<"$out" || fail "batchai-job status $id: not succeeded: $out"
grep -qxF "outputs:          $WORK/torch/$id/outputs" <<<"$out" && grep -qxF "logs:             $WORK/torch/$id/logs" <<<"$out" ||
    fail "batchai-job status $id does not say where ./outputs is kept: $out"
# Azure's basics/hello-world-output as shipped (its image left out: no container here), no code: the
# working directory is the submit directory's, and ./outputs exists in it.
write_job hello-world-output.yml <<'YAML'
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
command: echo "hello world" > ./outputs/helloworld.txt && cat hello-world-output.yml >/dev/null
YAML
hid=$(submit --batchai-job=hello-world-output.yml)
st=$(wait_job "$hid" 60)
[ "$st" = COMPLETED ] || fail "hello-world-output.yml: job $hid ended $st: $(cat "$WORK/hello-world-output/$hid/stdouterr/stderr.txt" 2>&1)"
assert_grep "hello world" "$WORK/hello-world-output/$hid/outputs/helloworld.txt"
[ ! -e "$WORK/outputs" ] || fail "hello-world-output.yml: ./outputs was made in the submit directory"
as_user "$CL/batchai-job files $id" | grep -q 'stdout.txt' || fail "batchai-job files $id lists no stdout.txt"
as_user "timeout 60 $CL/batchai-job stream $id" | grep -q "^rank 3 of 4 " || fail "batchai-job stream $id: no rank 3"

# 2. cifar-train under MPI, data and model in the datastore "myshare".
install -d -m 0755 "$CL/bin"
install -m 0755 "$TRAINER" "$CL/bin/cifar-train"
ln -s "$(cd "$DATA" && pwd -P)" "$SHARE/cifar-10-batches-bin"
write_job cifar.yml <<YAML
\$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
command: >-
  mkdir -p \${{outputs.model}}/saved_models &&
  cifar-train --dir=\${{outputs.model}} --data=\${{inputs.cifar}}
  --device cpu --epochs 1 --limit-train 256 --limit-test 128 --threads 1
inputs:
  cifar:
    type: uri_folder
    path: azureml://datastores/myshare/paths/cifar-10-batches-bin
    mode: ro_mount
outputs:
  model:
    type: uri_folder
    path: azureml://datastores/myshare/paths/cifar-aml
environment_variables:
  PATH: $CL/bin:$USER_PATH
  OMPI_MCA_btl: self,tcp
distribution:
  type: mpi
  process_count_per_instance: 1
resources:
  instance_count: 2
limits:
  timeout: 600
YAML
id=$(submit --batchai-job=cifar.yml)
st=$(wait_job "$id" 300)
logs=$WORK/cifar/$id/stdouterr
[ "$st" = COMPLETED ] || fail "cifar.yml: job $id ended $st: $(tail -n 20 "$logs/stderr.txt" 2>&1)"
model=$SHARE/cifar-aml/saved_models/keras_cifar10_trained_model.h5
assert_file "$model"
/usr/bin/python3 -c 'import h5py, sys; f = h5py.File(sys.argv[1], "r"); sys.exit(0 if "model_weights" in f else 1)' \
    "$model" || fail "$model is not a Keras HDF5 model"
grep -qi "epoch" "$logs/stdout.txt" || fail "cifar.yml: no training progress: $(head -c 1000 "$logs/stdout.txt")"

# 3. What Slurm cannot run is refused at submission, by field.
write_job refused.yml <<'YAML'
command: echo hi
services:
  my_jupyter_lab:
    type: jupyter_lab
YAML
out=$(as_user "sbatch --parsable --batchai-job=refused.yml" </dev/null 2>&1) && fail "refused.yml was accepted: $out"
grep -q "services: interactive services" <<<"$out" || fail "refused.yml: the refusal does not name services: $out"
# A datastore the site has no share for is refused at submission, by name.
write_job nostore.yml <<'YAML'
command: ls ${{inputs.d}}
inputs:
  d:
    path: azureml://datastores/nosuchstore/paths/x
YAML
out=$(as_user "sbatch --parsable --batchai-job=nostore.yml" </dev/null 2>&1) && fail "nostore.yml was accepted: $out"
grep -q 'inputs.d.path: share "nosuchstore" is not available on this cluster' <<<"$out" ||
    fail "nostore.yml: the refusal does not name the datastore: $out"
assert_nodes_idle
pass "torch.yml: 4 ranks all_reduce over gloo on n1+n2 with Azure ML's variables; cifar.yml: cifar-train under MPI wrote $model; services and an unmapped datastore refused"
