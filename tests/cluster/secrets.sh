#!/usr/bin/env bash
# environmentVariables and secrets reach every task; a secret's value appears in no Slurm record
# (scontrol show job -dd, scontrol write batch_script), no daemon log and no Batch AI log.
. "$(dirname "$0")/lib.sh"
cluster_start
secret="tok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
# The job compares a digest through a helper script: its command lines (stored in the batch script) and
# its output hold no value.
printf %s "$secret" | md5sum | cut -c1-32 >"$WORK/token.md5"
cat >"$WORK/check-token" <<'SH'
#!/bin/sh
[ "$(printf %s "$API_TOKEN" | md5sum | cut -c1-32)" = "$(cat "$(dirname "$0")/token.md5")" ]
SH
chmod 0755 "$WORK/check-token"
write_job sec.json <<JSON
{"properties": {"nodeCount": 2,
  "customMpiSettings": {"commandLine": "sh -c '$WORK/check-token && echo token-ok-\$AZ_BATCHAI_TASK_INDEX; echo greeting=\$GREETING'", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "jobPreparation": {"commandLine": "$WORK/check-token && echo prep-token-ok"},
  "environmentVariables": [{"name": "GREETING", "value": "hello world"}],
  "secrets": [{"name": "API_TOKEN", "value": "$secret"}]}}
JSON
# The job file holds the value, so it is readable by its owner only.
chmod 0600 "$WORK/sec.json"
id=$(submit --batchai-job=sec.json --hold)
scontrol show job -dd "$id" >"$CL/show.txt"
(cd "$CL" && scontrol write batch_script "$id" "$CL/script.txt" >/dev/null)
assert_file "$CL/script.txt"
scontrol release "$id"
st=$(wait_job "$id")
logs=$(log_dir "$id" sec)
[ "$st" = COMPLETED ] || fail "job $id ended $st: $(cat "$logs/stderr.txt")"
assert_grep "token-ok-0" "$logs/stdout.txt"
assert_grep "token-ok-1" "$logs/stdout.txt"
assert_grep "greeting=hello world" "$logs/stdout.txt"
[ "$(cat "$logs"/stdout-job_prep-*.txt | grep -c prep-token-ok)" -ge 1 ] || fail "preparation did not see the secret"
scontrol show job -dd "$id" >>"$CL/show.txt"
leaks=$(grep -rl -- "$secret" "$CL/show.txt" "$CL/script.txt" "$CL/log" "$SHARE" "$CL/state" "$CL/spool" 2>/dev/null || true)
[ -z "$leaks" ] || fail "the secret's value leaked into: $leaks"
# Only the steps that need it see the secret (finding 7): not the batch step, not another srun step of the
# job, so never srun's environment (nor, with a container, the step's config.json). Its file is the user's,
# 0600, and goes with the job.
cat >"$WORK/envs.sh" <<'SH'
#!/bin/sh
env >"$HOME/batch.env"
srun -n1 env >"$HOME/step.env"
stat -c '%U %a' "$AZ_BATCHAI_JOB_MOUNT_ROOT/../secrets.env" >"$HOME/secrets.stat"
SH
chown "$TEST_USER:" "$WORK/envs.sh"
id=$(submit --batchai-job=sec.json -N2 -o "$WORK/envs-%j.out" envs.sh)
[ "$(wait_job "$id")" = COMPLETED ] || fail "job $id failed: $(cat "$WORK/envs-$id.out")"
assert_grep "GREETING=hello world" "$WORK/batch.env"
assert_grep "GREETING=hello world" "$WORK/step.env"
if grep -q -- "$secret" "$WORK/batch.env" "$WORK/step.env"; then fail "the secret reached the batch or a plain step"; fi
[ "$(cat "$WORK/secrets.stat")" = "$TEST_USER 600" ] || fail "secrets.env is $(cat "$WORK/secrets.stat")"
assert_nodes_idle
[ ! -e "$CL/jobs/$id" ] || fail "the job directory, secrets.env in it, outlived the job"
pass "environment and secret set in every task; the value is in no job record, script or log"
