#!/usr/bin/env bash
# A container job: containerSettings.imageSourceRegistry.image runs the preparation and the main step in
# Slurm's OCI --container (rootless runc) on a bundle the test builds from busybox-static and stages with
# contrib/stage-oci-bundle; nothing is pulled. The bundle bind-mounts the test cluster's directory (shares,
# job directories, submit dir) at the same path, as a site's staged bundles bind its share roots and
# job_root, and has the mount point of the step's spool directory (Slurm 23.11+).
# batchai-job exec into a running container job (from the file, or with its own script) runs its command in
# the job's container with the job's variables.
# run-tests: beside
. "$(dirname "$0")/lib.sh"
busybox_bundle_deps
cluster_start
bundle=$CL/images/busybox_test
host_run_slurm=$(ls -d /run/slurm 2>/dev/null || true)
busybox_bundle "$bundle"
[ -d "$bundle/rootfs/run/slurm" ] && [ -d "$bundle/rootfs$CL" ] || fail "staging made no mount points: $(ls -R "$bundle/rootfs")"
[ "$(ls -d /run/slurm 2>/dev/null || true)" = "$host_run_slurm" ] || fail "staging followed the image's /var/run link out of the rootfs"

write_job c.json <<JSON
{"properties": {"nodeCount": 2,
  "containerSettings": {"imageSourceRegistry": {"image": "busybox:test"}},
  "customMpiSettings": {"commandLine": "sh -c 'echo main in \$(cat /etc/image-name) rank \$AZ_BATCHAI_TASK_INDEX greeting \$GREETING uidmap \$(cat /proc/self/uid_map)'", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "environmentVariables": [{"name": "GREETING", "value": "hi"}],
  "jobPreparation": {"commandLine": "echo prep in \$(cat /etc/image-name) on \$SLURMD_NODENAME uidmap \$(cat /proc/self/uid_map)"}}}
JSON
id=$(submit --batchai-job=c.json)
st=$(wait_job "$id")
logs=$(log_dir "$id" c)
[ "$st" = COMPLETED ] || fail "container job $id ended $st: $(cat "$logs/stderr.txt")"
[ "$(grep -c "main in busybox test image" "$logs/stdout.txt")" = 2 ] || fail "main step not in the container: $(cat "$logs/stdout.txt")"
assert_grep "greeting hi" "$logs/stdout.txt"
# Inside the container every process is the job's user: the user namespace maps the container's ids onto
# that uid alone, for the main step and the preparation alike.
[ "$(grep -c "uidmap 0 $TEST_UID 1\$" "$logs/stdout.txt")" = 2 ] || fail "main step not the user's: $(cat "$logs/stdout.txt")"
for f in "$logs"/stdout-job_prep-*.txt; do assert_grep "uidmap 0 $TEST_UID 1\$" "$f"; done
[ "$(cat "$logs"/stdout-job_prep-*.txt | grep -c "prep in busybox test image")" -ge 1 ] ||
    fail "preparation not in the container: $(cat "$logs"/stdout-job_prep-*.txt)"
assert_nodes_idle

# batchai-job exec into a running container job runs in the job's container: the image's own file, and the
# user namespace that maps the container's root onto the user.
[ ! -e /etc/image-name ] || fail "the host has /etc/image-name: the exec check below would prove nothing"
BJ=$BUILD/bin/batchai-job
[ -x "$BJ" ] || fail "$BJ is not built"
install -m 0755 "$BJ" "$CL/batchai-job"
write_job run.json <<JSON
{"properties": {"nodeCount": 1,
  "containerSettings": {"imageSourceRegistry": {"image": "busybox:test"}},
  "environmentVariables": [{"name": "GREETING", "value": "hi there"}],
  "secrets": [{"name": "TOKEN", "value": "s3cret-exec"}],
  "customToolkitSettings": {"commandLine": "sleep 60"}, $LOGS_JSON, $MOUNT_JSON}}
JSON
chmod 0600 "$WORK/run.json"
cat >"$WORK/own.sh" <<'SH'
#!/bin/sh
sleep 60
SH
chmod 0755 "$WORK/own.sh"; chown "$TEST_USER:" "$WORK/own.sh"
# A job from the file, and one with its own script (whose header names no container: exec learns it from the
# plugin on the node).
gen=$(submit --batchai-job=run.json)
own=$(submit --batchai-job=run.json --batchai-name=own own.sh)
for id in $gen $own; do
    for ((i = 0; i < 300; i++)); do [ "$(job_field "$id" JobState)" = RUNNING ] && break; sleep 0.1; done
done
# The command by its path in the image: 26.05's slurmstepd resolves a bare name on the node (sh is
# /usr/bin/sh there, absent from the bundle). Inside: the image's own file, the user namespace that maps the
# container's root onto the user, the job's AZ_BATCHAI_* variables and its environmentVariables, and the
# mounts under the mount root.
for id in $gen $own; do
    name=$([ "$id" = "$gen" ] && echo run || echo own)
    out=$(as_user "$CL/batchai-job exec $id -- /bin/sh -c 'echo in \$(cat /etc/image-name) uidmap \$(cat /proc/self/uid_map); echo job \$AZ_BATCHAI_JOB_NAME greeting \$GREETING; ls -d \$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs'" 2>&1) ||
        fail "exec into container job $id: $out"
    grep -q "^in busybox test image uidmap 0 $TEST_UID 1\$" <<<"$out" || fail "exec did not run in job $id's container: $out"
    grep -qx "job $name greeting hi there" <<<"$out" || fail "exec in job $id's container lacks the job's variables: $out"
    grep -qx "$CL/jobs/$id/mounts/myshare/logs" <<<"$out" || fail "exec in job $id's container sees no mounts: $out"
    # The job's secrets stay in its secrets file: not in the command's environment, nor in srun's.
    out=$(as_user "$CL/batchai-job exec $id -- /bin/env" 2>&1) || fail "exec env in job $id: $out"
    grep -q "^AZ_BATCHAI_JOB_NAME=$name\$" <<<"$out" || fail "exec env in job $id: no AZ_BATCHAI_JOB_NAME: $out"
    ! grep -q "s3cret-exec\|^TOKEN=" <<<"$out" || fail "a secret reached exec's environment in job $id: $out"
done
as_user "scancel $gen $own"
wait_job "$gen" >/dev/null
wait_job "$own" >/dev/null
assert_nodes_idle

# A site without a container runtime refuses container jobs at submit time.
"$LC" stop "$CL" >/dev/null
lc_start "$CL" --plugin "$PLUGIN" \
    --plugin-args "shares_root=$CL/shares job_root=$CL/jobs container_runtime=none" >/dev/null
if out=$(as_user "sbatch --batchai-job=c.json" 2>&1 </dev/null); then fail "container_runtime=none accepted: $out"; fi
grep -q "batchai: .*container" <<<"$out" || fail "unclear refusal: $out"
pass "container job ran preparation and main step in the local busybox bundle; exec ran in it; runtime none refuses"
