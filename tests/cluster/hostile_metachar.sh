#!/usr/bin/env bash
# Hostile user vs the rendered script (security findings 8 and 17.5): shell metacharacters in every job.json
# string that reaches the batch script, the secrets file or a step's command line. Each either arrives intact,
# as one word, where the job reads it, or is refused by sbatch with an error naming the field. No injected
# command ever runs (it would leave a pwned-* file in the user's directory).
. "$(dirname "$0")/lib.sh"
cluster_start
inj() { printf '%s' "x;touch $WORK/pwned-$1 \$(touch $WORK/pwned-$1b) \`touch $WORK/pwned-$1c\` ' \" \\\\ end"; }
assert_no_pwn() { [ -z "$(find "$WORK" -name 'pwned-*')" ] || fail "$1: injected code ran: $(find "$WORK" -name 'pwned-*')"; }

# 1. Values that reach the script's comments, the environment and the secrets file arrive intact.
env_val=$(inj env)
sec_val=$(inj sec)
nl_val=$(printf 'line1\ntouch %s/pwned-nl\n# x' "$WORK")
printf '%s' "$env_val" | md5sum | cut -c1-32 >"$WORK/env.md5"
printf '%s' "$sec_val" | md5sum | cut -c1-32 >"$WORK/sec.md5"
printf '%s' "$nl_val" | md5sum | cut -c1-32 >"$WORK/nl.md5"
cat >"$WORK/check" <<'SH'
#!/bin/sh
d=$(dirname "$0")
[ "$(printf %s "$V_ENV" | md5sum | cut -c1-32)" = "$(cat "$d/env.md5")" ] || { echo "env mangled: $V_ENV"; exit 1; }
[ "$(printf %s "$V_SEC" | md5sum | cut -c1-32)" = "$(cat "$d/sec.md5")" ] || { echo "secret mangled"; exit 1; }
[ "$(printf %s "$V_NL" | md5sum | cut -c1-32)" = "$(cat "$d/nl.md5")" ] || { echo "multi-line value mangled"; exit 1; }
echo "$1-intact"
SH
chmod 0755 "$WORK/check"
/usr/bin/python3 - "$WORK/meta.json" "$WORK" "$LOGS_JSON" "$MOUNT_JSON" "$env_val" "$sec_val" "$nl_val" <<'PY'
import json, sys
path, work, logs, mount, env_val, sec_val, nl_val = sys.argv[1:]
props = json.loads("{%s, %s}" % (logs, mount))
props.update({
    "nodeCount": 2,
    "customMpiSettings": {"commandLine": work + "/check main", "processCount": 2},
    "jobPreparation": {"commandLine": work + "/check prep"},
    "environmentVariables": [{"name": "V_ENV", "value": env_val}, {"name": "V_NL", "value": nl_val}],
    "secrets": [{"name": "V_SEC", "value": sec_val}],
})
json.dump({"properties": props}, open(path, "w"))
PY
chown "$TEST_USER:" "$WORK/meta.json" && chmod 0600 "$WORK/meta.json"
as_user "batchai-job() { '$BUILD/bin/batchai-job' \"\$@\"; }; batchai-job -o shares_root=$CL/shares translate meta.json" >"$CL/meta.sh" ||
    fail "translate failed"
bash -n "$CL/meta.sh" || fail "the translated script is not valid bash"
id=$(submit --batchai-job=meta.json)
st=$(wait_job "$id")
logs=$(log_dir "$id" meta)
[ "$st" = COMPLETED ] || fail "job $id ended $st: $(cat "$logs/stdout.txt" "$logs/stderr.txt")"
[ "$(grep -c "main-intact" "$logs/stdout.txt")" = 2 ] || fail "main step: $(cat "$logs/stdout.txt")"
# grep reads the files itself: `cat | grep -q` fails under pipefail when grep quits before cat is done.
grep -q "prep-intact" "$logs"/stdout-job_prep-*.txt || fail "preparation: $(cat "$logs"/stdout-job_prep-*.txt)"
assert_no_pwn "values"

# 2. Strings that would reach the script as code are refused by sbatch, naming the field.
refuse() { # FIELD-PATH JSON-PROPERTIES [BASE-PROPERTIES]
    local name=r$RANDOM out
    printf '{"properties": {"nodeCount": 1, %s, %s}}' "${3:-$LOGS_JSON, $MOUNT_JSON}" "$2" >"$WORK/$name.json"
    chown "$TEST_USER:" "$WORK/$name.json"
    if out=$(as_user "sbatch --batchai-job=$name.json" </dev/null 2>&1); then fail "sbatch accepted $1: $out"; fi
    grep -q "batchai: .*$1" <<<"$out" || fail "refusal of $1 does not name it: $out"
}
img='"customToolkitSettings": {"commandLine": "true"}, "containerSettings": {"imageSourceRegistry": {"image": "%s"}}'
refuse properties.containerSettings.imageSourceRegistry.image "$(printf "$img" "ubuntu;touch $WORK/pwned-img")"
refuse properties.containerSettings.imageSourceRegistry.image "$(printf "$img" "\$(touch $WORK/pwned-img2)")"
refuse properties.containerSettings.imageSourceRegistry.image "$(printf "$img" "\`touch $WORK/pwned-img3\`")"
refuse properties.containerSettings.imageSourceRegistry.serverUrl \
    '"customToolkitSettings": {"commandLine": "true"}, "containerSettings": {"imageSourceRegistry": {"image": "ubuntu", "serverUrl": "r.io;touch '"$WORK"'/pwned-srv"}}'
refuse properties.horovodSettings.pythonScriptFilePath \
    '"horovodSettings": {"pythonScriptFilePath": "train.py`touch '"$WORK"'/pwned-py`"}'
refuse properties.horovodSettings.pythonInterpreterPath \
    '"horovodSettings": {"pythonScriptFilePath": "train.py", "pythonInterpreterPath": "python3 $(touch '"$WORK"'/pwned-int)"}'
refuse properties.stdOutErrPathPrefix \
    '"customToolkitSettings": {"commandLine": "true"}, "stdOutErrPathPrefix": "/tmp/x;touch '"$WORK"'/pwned-log"'
refuse "properties.mountVolumes.azureFileShares\\[1\\].relativeMountPath" \
    '"customToolkitSettings": {"commandLine": "true"}, "mountVolumes": {"azureFileShares": [{"azureFileUrl": "https://a.file.core.windows.net/myshare", "relativeMountPath": "myshare"}, {"azureFileUrl": "https://a.file.core.windows.net/myshare", "relativeMountPath": "m;touch '"$WORK"'/pwned-mnt"}]}' "$LOGS_JSON"
assert_no_pwn "refused strings"

# 3. A script path with ';' and spaces is one double-quoted word: the job runs (and fails: no such file),
#    nothing else does.
printf '{"properties": {"nodeCount": 1, %s, "horovodSettings": {"pythonScriptFilePath": "t.py; touch %s/pwned-semi", "pythonInterpreterPath": "/bin/sh"}}}' \
    "$LOGS_JSON, $MOUNT_JSON" "$WORK" >"$WORK/semi.json"
chown "$TEST_USER:" "$WORK/semi.json"
id=$(submit --batchai-job=semi.json)
[ "$(wait_job "$id")" = FAILED ] || fail "job $id with a ';' script path did not fail"
assert_grep "t.py; touch $WORK/pwned-semi: No such file" "$(log_dir "$id" semi)/stderr.txt"
assert_no_pwn "script path with ';'"
assert_nodes_idle
pass "metacharacters in values arrive intact (environment, multi-line, secrets); code-bearing fields refused by name"
