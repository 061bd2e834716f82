#!/usr/bin/env bash
# Hostile user vs the epilog's clean-up (the root-path review's open case): the job leaves, in its job temp
# (<job_temp>/<jobid>.<node>) and in its job directory (<job_root>/<jobid>), a mode-000 directory holding a
# mode-000 directory with a file, a read-only directory with a file, a tree 600 levels deep with a file at
# the bottom, and finally makes both directories themselves mode 000. The epilog still removes all of it,
# secrets.env included, and logs no failure.
. "$(dirname "$0")/lib.sh"
cluster_start
write_job m.json <<JSON
{"properties": {"nodeCount": 1, $LOGS_JSON, $MOUNT_JSON,
  "secrets": [{"name": "TOKEN", "value": "s3cret-value"}],
  "customToolkitSettings": {"commandLine": "set -e; j=\$AZ_BATCHAI_JOB_MOUNT_ROOT/..; test -f \$j/secrets.env; for t in \$AZ_BATCHAI_JOB_TEMP \$j; do cd \$t; mkdir -p locked/inner; touch locked/inner/f; chmod 000 locked/inner locked; mkdir ro; touch ro/f; chmod 500 ro; i=0; while [ \$i -lt 600 ]; do mkdir d; cd d; i=\$((i+1)); done; touch bottom; cd /; chmod 000 \$t; done; echo LEFT-IT-ALL"}}}
JSON
id=$(submit --batchai-job=m.json)
st=$(wait_job "$id")
logs=$(log_dir "$id" m)
[ "$st" = COMPLETED ] || fail "job $id ended $st: $(cat "$logs/stderr.txt")"
assert_grep LEFT-IT-ALL "$logs/stdout.txt"
assert_nodes_idle
for d in "$CL/jobs/$id" "$CL/scratch/batchai/$id".n1 "$CL/scratch/batchai/$id".n2; do
    for i in $(seq 50); do [ -e "$d" ] || break; sleep 0.1; done
    [ ! -e "$d" ] || fail "the epilog left $d: $(find "$d" -maxdepth 3 | head)"
    ! ls -d "$(dirname "$d")"/.stale-* 2>/dev/null || fail "the epilog had to move leftovers aside: $(ls -a "$(dirname "$d")")"
done
! grep -h "could not remove" "$CL"/log/slurmd-n*.log || fail "slurmd logged a failed clean-up"
pass "the epilog removed a mode-000 job directory and job temp, each with mode-000 and read-only directories and a 600-level tree"
