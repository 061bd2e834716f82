#!/usr/bin/env bash
# Every toolkit kind of job.json runs a real job on the two-node cluster, submitted by an unprivileged user
# with `sbatch --batchai-job` and no script. Where Debian ships the framework it is the real one:
#   pyTorchSettings      python3-torch: torch.distributed all_reduce over gloo, rendezvous from
#                        AZ_BATCHAI_PYTORCH_INIT_METHOD (the first node's NodeAddr); communicationBackend mpi
#                        fails with torch's own message (Debian's torch has no MPI backend)
#   horovodSettings,     python3-mpi4py: an MPI allreduce across both nodes; rank, size and node against
#   customMpiSettings,   AZ_BATCHAI_MPI_HOST_FILE (the nodes' NodeAddr, one per line)
#   chainerSettings
# and elsewhere a stand-in named as the toolkit's launcher would be (tests/cluster/toolkits/standin.py as
# the python script, `cntk` and `caffe` on PATH) records its command line, placement and environment:
#   tensorFlowSettings   parameter servers and workers, AZ_BATCHAI_PS_HOSTS / _WORKER_HOSTS / _TASK_INDEX
#   cntkSettings         BrainScript (`cntk configFile=...`) and Python, under MPI
#   caffeSettings        `caffe train --solver=...`, under MPI on several nodes
#   caffe2Settings       one python process
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "python3-torch is not installed (contrib/install-deps.sh)"
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || skip "python3-mpi4py is not installed (contrib/install-deps.sh)"
cluster_start
srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix MPI plugin here"
HERE=$(cd "$(dirname "$0")" && pwd)/toolkits
install -d -o "$TEST_USER" "$WORK/rec" "$WORK/bin"
install -m 0755 "$HERE"/*.py "$WORK/"
for l in cntk caffe; do ln -s ../standin.py "$WORK/bin/$l"; done
ADDR=$(scontrol -o show node n1 | sed -n 's/.* NodeAddr=\([^ ]*\) .*/\1/p')
[ -n "$ADDR" ] || fail "no NodeAddr for n1"
ADDR2=$(scontrol -o show node n2 | sed -n 's/.* NodeAddr=\([^ ]*\) .*/\1/p')
[ -n "$ADDR2" ] || fail "no NodeAddr for n2"
ENV_JSON='"environmentVariables": [{"name": "REC_DIR", "value": "'"$WORK"'/rec"},
  {"name": "PATH", "value": "'"$WORK/bin:$USER_PATH"'"}, {"name": "OMPI_MCA_btl", "value": "self,tcp"},
  {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}]'

# run NAME SETTINGS-JSON [NODES]: submit a job and wait; prints its log directory. Fails unless COMPLETED.
run() {
    local name=$1 settings=$2 nodes=${3:-2} id st logs
    write_job "$name.json" <<JSON
{"properties": {"nodeCount": $nodes, $settings, $LOGS_JSON, $MOUNT_JSON, $ENV_JSON,
  "constraints": {"maxWallClockTime": "00:05:00"}}}
JSON
    id=$(submit --batchai-job="$name.json")
    st=$(wait_job "$id")
    logs=$(log_dir "$id" "$name")
    [ "$st" = COMPLETED ] || fail "$name: job $id ended $st: $(tail -n 20 "$logs/stderr.txt")"
    echo "$logs"
}
# check KIND EXPECTATION...: tests/cluster/toolkits/check.py over the records of KIND.
check() { /usr/bin/python3 "$HERE/check.py" "$WORK/rec" "$ADDR,$ADDR2" "$@" || fail "$1: records do not match (above)"; }

# PyTorch, TCP rendezvous with gloo: the official recipe's arguments.
logs=$(run torch '"pyTorchSettings": {"pythonScriptFilePath": "'"$WORK"'/torch_allreduce.py", "processCount": 2,
  "communicationBackend": "gloo", "commandLineArgs": "--dist-url $AZ_BATCHAI_PYTORCH_INIT_METHOD --rank $AZ_BATCHAI_TASK_INDEX --world-size 2"}')
# The rendezvous port is the job's own (20000 + job id mod 10000); the job id is in the log directory's path.
port=$((20000 + $(basename "$(dirname "$logs")") % 10000))
assert_grep "rank 0 of 2 backend gloo init tcp://$ADDR:$port sum 3.0 on n1" "$logs/stdout.txt"
assert_grep "rank 1 of 2 backend gloo init tcp://$ADDR:$port sum 3.0 on n2" "$logs/stdout.txt"
# PyTorch with communicationBackend mpi: srun --mpi, and torch says it has no MPI.
write_job torchmpi.json <<JSON
{"properties": {"nodeCount": 2, "pyTorchSettings": {"pythonScriptFilePath": "$WORK/torch_allreduce.py",
  "processCount": 2, "communicationBackend": "mpi", "commandLineArgs": "--backend mpi"}, $LOGS_JSON, $MOUNT_JSON, $ENV_JSON}}
JSON
id=$(submit --batchai-job=torchmpi.json)
[ "$(wait_job "$id")" = FAILED ] || fail "torch with the mpi backend did not fail"
assert_grep "Distributed package doesn't have MPI built in" "$(log_dir "$id" torchmpi)/stderr.txt"

# MPI toolkits: a real allreduce across both nodes.
logs=$(run horovod '"horovodSettings": {"pythonScriptFilePath": "'"$WORK"'/mpi_allreduce.py", "commandLineArgs": "horovod"}')
check horovod mpi
logs=$(run custommpi '"customMpiSettings": {"commandLine": "python3 '"$WORK"'/mpi_allreduce.py custommpi", "processCount": 2}')
check custommpi mpi
logs=$(run chainer '"chainerSettings": {"pythonScriptFilePath": "'"$WORK"'/mpi_allreduce.py", "commandLineArgs": "chainer", "processCount": 2}')
check chainer mpi

# TensorFlow: one parameter server and two workers, laid out as the host lists say.
logs=$(run tf '"tensorFlowSettings": {"pythonScriptFilePath": "'"$WORK"'/standin.py", "parameterServerCount": 1, "workerCount": 2,
  "masterCommandLineArgs": "tf --job_name=master", "workerCommandLineArgs": "tf --job_name=worker --ps_hosts=$AZ_BATCHAI_PS_HOSTS --worker_hosts=$AZ_BATCHAI_WORKER_HOSTS --task_index=$AZ_BATCHAI_TASK_INDEX",
  "parameterServerCommandLineArgs": "tf --job_name=ps --ps_hosts=$AZ_BATCHAI_PS_HOSTS --worker_hosts=$AZ_BATCHAI_WORKER_HOSTS --task_index=$AZ_BATCHAI_TASK_INDEX"}')
check tf tensorflow
# Its parameter server served until stopped: the job succeeded, and its stderr.txt holds no message of srun
# about a stopped or misplaced step.
! grep -E "Killed|forcing job termination|processes on|KeyboardInterrupt|error" "$logs/stderr.txt" ||
    fail "tf: srun's messages in the stderr.txt of a job that succeeded (above)"
# TensorFlow on one node: the master's arguments, one process.
logs=$(run tf1 '"tensorFlowSettings": {"pythonScriptFilePath": "'"$WORK"'/standin.py", "masterCommandLineArgs": "tf1 --job_name=master"}' 1)
check tf1 single --job_name=master

# CNTK: BrainScript through the cntk launcher, and Python; MPI over both nodes.
logs=$(run cntkbs '"cntkSettings": {"languageType": "BrainScript", "configFilePath": "'"$WORK"'/net.cntk", "commandLineArgs": "stderr=x", "processCount": 2}')
check cntk each "configFile=$WORK/net.cntk" stderr=x
logs=$(run cntkpy '"cntkSettings": {"languageType": "Python", "pythonScriptFilePath": "'"$WORK"'/standin.py", "commandLineArgs": "cntkpy --epochs 2", "processCount": 2}')
check cntkpy each --epochs 2
# Caffe: `caffe train` under MPI on two nodes; Caffe2: one python process.
logs=$(run caffe '"caffeSettings": {"configFilePath": "'"$WORK"'/solver.prototxt", "processCount": 2}')
check caffe each train "--solver=$WORK/solver.prototxt"
logs=$(run caffe2 '"caffe2Settings": {"pythonScriptFilePath": "'"$WORK"'/standin.py", "commandLineArgs": "caffe2 --num_gpus 0"}')
check caffe2 single --num_gpus 0
assert_nodes_idle
pass "pyTorch (gloo; mpi refused by torch), horovod, customMpi, chainer, tensorFlow, cntk (2), caffe, caffe2 ran on both nodes"
