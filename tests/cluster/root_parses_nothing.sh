#!/usr/bin/env bash
# Root parses nothing a user wrote, measured from outside: an LD_PRELOAD interposer (parse_spy.so) sits in
# front of slurmd and of every slurmstepd on both nodes (the prolog's too: slurmstepd is a wrapper that
# preloads it, bind-mounted over the real one in each node's own mount namespace) and logs each cJSON and
# libyaml parse with the process's real, effective and saved uid. One 2-node job.json job and one 2-node
# Azure ML YAML job run; no parse may have run with any uid 0, and the job's own steps must have been seen
# parsing as the user (so the interposer was in front of slurmstepd). The bind mount stays in the nodes' own
# mount namespaces (hosts mode), or else in a private one this test runs its whole cluster in.
# The private namespace is entered before lib.sh runs: lib.sh may stage the build in a directory its exit
# trap removes, and an exec after it would leave that directory behind.
if [ "${BATCHAI_HOSTS:-0}" != 1 ] && [ -z "${SPY_PRIVATE_NS:-}" ] && unshare -m true 2>/dev/null; then
    SPY_PRIVATE_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
SPY=$BUILD/tests/parse_spy.so
[ -f "$SPY" ] || skip "$SPY is not built"
if [ -z "${BATCHAI_HOSTS_SET:-}" ] && [ -z "${SPY_PRIVATE_NS:-}" ]; then
    skip_for root "cannot make a mount namespace here (unshare -m)"
fi
STEPD=$(readlink -f "$(dirname "$(command -v slurmd)")/slurmstepd")
[ -x "$STEPD" ] || skip "no slurmstepd beside $(command -v slurmd)"

install -d -m 0755 /var/lib/batchai-test
D=$(mktemp -d /var/lib/batchai-test/spy.XXXXXX)
chmod 0755 "$D"
trap 'rm -rf "$D" ${STAGE:+"$STAGE"}' EXIT
install -m 0755 "$SPY" "$D/parse_spy.so"
install -D -m 0755 "$STEPD" "$D/real/slurmstepd"
install -m 0666 /dev/null "$D/parse-calls.log"
printf '#!/bin/sh\nLD_PRELOAD=%s/parse_spy.so exec %s/real/slurmstepd "$@"\n' "$D" "$D" >"$D/slurmstepd"
chmod 0755 "$D/slurmstepd"

LD_PRELOAD=$D/parse_spy.so cluster_start
trap 'rc=$?; rm -rf "$D"; (exit $rc); cluster_stop' EXIT
for n in ${BATCHAI_HOSTS_SET:+n1 n2} ${SPY_PRIVATE_NS:+here}; do
    on_host "$n" mount --bind "$D/slurmstepd" "$STEPD" || fail "cannot put the wrapper over $STEPD on $n"
done

write_job j.json <<JSON
{"properties": {"nodeCount": 2, $LOGS_JSON, $MOUNT_JSON,
  "environmentVariables": [{"name": "GREETING", "value": "hello"}],
  "customMpiSettings": {"processCount": 2, "commandLine": "echo json-ran-\$GREETING"}}}
JSON
write_job y.yml <<'YAML'
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
command: echo yaml-ran
environment_variables:
  GREETING: hello
resources:
  instance_count: 2
YAML
for f in j.json y.yml; do
    id=$(submit --batchai-job="$f")
    st=$(wait_job "$id")
    [ "$st" = COMPLETED ] || fail "job $id ($f) ended $st: $(cat "$(log_dir "$id" "${f%.*}")/stderr.txt" 2>&1)"
done

calls=$D/parse-calls.log
grep -q " $TEST_UID $TEST_UID $TEST_UID slurmstepd$" "$calls" ||
    fail "the interposer saw no parse by a job step (so it is not in front of slurmstepd): $(head -c 2000 "$calls")"
# Fields: function ruid euid suid command.
root=$(awk '$2 == 0 || $3 == 0 || $4 == 0' "$calls" | sort | uniq -c)
[ -z "$root" ] || fail "cJSON or libyaml parsed with uid 0 (count, function, ruid, euid, suid, command):
$root"
pass "$(wc -l <"$calls") parses during a job.json and a YAML job, none with uid 0"
