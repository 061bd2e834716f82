#!/usr/bin/env bash
# Options typed on the sbatch command line win over the file's #SBATCH lines.
. "$(dirname "$0")/lib.sh"
cluster_start
write_job over.json <<JSON
{"properties": {"nodeCount": 2,
  "customMpiSettings": {"commandLine": "hostname", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "constraints": {"maxWallClockTime": "0.01:00:00"}}}
JSON
id=$(submit --batchai-job=over.json --job-name=typed --time=7 --nodes=1)
st=$(wait_job "$id")
[ "$st" = COMPLETED ] || fail "job $id ended $st: $(cat "$(log_dir "$id" over)"/stderr.txt 2>/dev/null)"
[ "$(job_field "$id" JobName)" = typed ] || fail "JobName=$(job_field "$id" JobName), want typed"
[ "$(job_field "$id" TimeLimit)" = 00:07:00 ] || fail "TimeLimit=$(job_field "$id" TimeLimit), want 00:07:00"
[ "$(job_field "$id" NumNodes)" = 1 ] || fail "NumNodes=$(job_field "$id" NumNodes), want 1"
# The log directory still follows the file (the job name in it is the file's).
assert_file "$(log_dir "$id" over)/stdout.txt"
assert_nodes_idle
pass "--job-name, --time and --nodes on the command line won over the file"
