#!/usr/bin/env bash
# GPUs in an OCI container (Slurm's --container, rootless runc, the busybox bundle of container.sh) on the
# cluster with stand-in GPUs: one rank of a container job on a cluster with gpus.gpucl=1, the nodes having 2.
# (One node: Slurm's --container runs one task per node of a step, and 22.05 writes the environment into the
# bundle's own config.json, which two slurmd of one host share.) Inside
# the container each task has its CUDA_VISIBLE_DEVICES, AZ_BATCHAI_NUM_GPUS, LOCAL_RANK and the
# NVIDIA_VISIBLE_DEVICES the NVIDIA hooks read, and sees its node's device nodes (the bundle binds the
# cluster's directory, where they are, as a site's GPU bundle gets /dev/nvidia* from the NVIDIA hook or CDI);
# on the cgroup pass the task's devices cgroup still holds in the container: it opens its own GPU alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gpulib.bash"
busybox_bundle_deps
CLUSTER_OPTS=(--gpus)
cluster_start "cluster.gpucl=debug gpus.gpucl=1 mpi=none"
gpu_probe
busybox_bundle "$CL/images/busybox_test"
write_job gc.json <<JSON
{"properties": {"nodeCount": 1, "cluster": {"id": "/subscriptions/0/resourceGroups/rg/providers/Microsoft.BatchAI/workspaces/ws/clusters/gpucl"},
  "containerSettings": {"imageSourceRegistry": {"image": "busybox:test"}},
  "customMpiSettings": {"commandLine": "cat /etc/image-name; sh $WORK/probe.sh", "processCount": 1},
  $LOGS_JSON, $MOUNT_JSON}}
JSON
id=$(submit --batchai-job=gc.json)
st=$(wait_job "$id")
out=$(log_dir "$id" gc)/stdout.txt
[ "$st" = COMPLETED ] || fail "container job $id ended $st: $(cat "$out" "$(log_dir "$id" gc)/stderr.txt" 2>&1)"
[ "$(grep -c '^busybox test image$' "$out")" = 1 ] || fail "the tasks did not run in the container: $(cat "$out")"
node=n1
line=$(grep "^GPU-TASK .* node=$node " "$out") || fail "no task on $node: $(cat "$out")"
# Slurm 22.05 starts the container with the environment srun gave the step, not the task's after the
# plugins: LOCAL_RANK, which the plugin sets per task, is missing there (the batch step sets none).
local_rank='local=0' release=$(slurmctld -V | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\)\..*/\1\2/p')
[ "${release:-0}" -gt 2205 ] || local_rank='local=unset'
[[ $line =~ \ cvd=[0-9]+\ num=1\ $local_rank\ nvd=all\  ]] ||
    fail "the container task on $node has not its one GPU's variables: $line"
# Its node's two device nodes are there; under ConstrainDevices it opens one, not the other.
[[ $line =~ nvidia[0-9]+=(open|denied)\ nvidia[0-9]+=(open|denied) ]] || fail "the container on $node lacks the device nodes: $line"
if [ "$CONSTRAINED" = 1 ]; then
    if [ "$(grep -o 'nvidia[0-9]*=open' <<<"$line" | wc -l)" != 1 ] || [ "$(grep -o 'nvidia[0-9]*=denied' <<<"$line" | wc -l)" != 1 ]; then
        fail "the container task on $node does not open its own GPU alone: $line"
    fi
fi
echo "OCI container, 1 rank:"; sed 's/^/    /' "$out"
pass "each task in its container sees its GPU$([ "$CONSTRAINED" = 1 ] && echo ", its devices cgroup holding there")"
