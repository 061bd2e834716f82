#!/usr/bin/env bash
# A mountVolumes share appears at $AZ_BATCHAI_JOB_MOUNT_ROOT/<relativeMountPath> on every node, owned so
# the user can use it; input and output directories resolve through it; the job directory is removed at
# the end.
. "$(dirname "$0")/lib.sh"
cluster_start
install -d -o "$TEST_USER" -g "$TEST_USER" "$SHARE/data"
echo "site data" >"$SHARE/data/in.txt"
write_job m.json <<JSON
{"properties": {"nodeCount": 2,
  "customMpiSettings": {"commandLine": "sh -c 'cat \$AZ_BATCHAI_INPUT_DATA/in.txt; echo out-\$AZ_BATCHAI_TASK_INDEX > \$AZ_BATCHAI_OUTPUT_MODEL/rank\$AZ_BATCHAI_TASK_INDEX.txt; echo root=\$AZ_BATCHAI_JOB_MOUNT_ROOT'", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "inputDirectories": [{"id": "DATA", "path": "\$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/data"}],
  "outputDirectories": [{"id": "MODEL", "pathPrefix": "\$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/models"}]}}
JSON
id=$(submit --batchai-job=m.json)
st=$(wait_job "$id")
logs=$(log_dir "$id" m)
[ "$st" = COMPLETED ] || fail "job $id ended $st: $(cat "$logs/stderr.txt")"
[ "$(grep -c "site data" "$logs/stdout.txt")" = 2 ] || fail "input not read on both nodes: $(cat "$logs/stdout.txt")"
assert_grep "root=$CL/jobs/$id/mounts" "$logs/stdout.txt"
out=$(find "$SHARE/models" -name 'rank*.txt' | sort | xargs cat)
[ "$out" = "$(printf 'out-0\nout-1')" ] || fail "output directory: got '$out'"
for f in $(find "$SHARE/models" -name 'rank*.txt'); do
    [ "$(stat -c %U "$f")" = "$TEST_USER" ] || fail "$f not owned by $TEST_USER"
done
[ ! -e "$CL/jobs/$id" ] || fail "the job directory $CL/jobs/$id is still there after the job"
[ -f "$SHARE/data/in.txt" ] || fail "cleaning the job directory removed site data"
assert_nodes_idle
pass "share mounted on both nodes; input read, outputs written as the user; job dir removed"
