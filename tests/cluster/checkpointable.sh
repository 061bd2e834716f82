#!/usr/bin/env bash
# The checkpointable opt-in for any command, not only the bundled trainer: two jobs run the same small
# program (a shell script that says it was warned when SIGUSR1 reaches it, and exits 3), each with
# --time=1 so that Slurm's warning, asked 60 s before the limit, is due at once.
#   warned.json    "x-checkpointable": true: the script asks for --signal=B:USR1@60 and passes it on to the
#                  exec'd step; the program gets it, and the job ends FAILED 3:0 before the limit.
#   unwarned.json  the same command without the opt-in: no warning ever comes; the program runs until Slurm
#                  ends it at the limit (TIMEOUT), and never says it was warned.
# Under JobRequeue=0 (set here), only the job with the opt-in is requeueable (scontrol's Requeue=1): its script
# asks for --requeue.
# run-tests: beside
. "$(dirname "$0")/lib.sh"
cluster_start
echo "JobRequeue=0" >>"$SLURM_CONF"
scontrol reconfigure || fail "scontrol reconfigure"
install -d -m 0755 "$CL/bin"
cat >"$CL/bin/warn-me" <<'SH'
#!/bin/sh
# A stand-in for a checkpointing trainer: waits for SIGUSR1, says so and exits 3, as cifar-train does.
trap 'echo "warn-me: SIGUSR1 reached pid $$"; exit 3' USR1
echo "warn-me: started as pid $$ with $*"
while :; do sleep 1; done
SH
chmod 0755 "$CL/bin/warn-me"
for name in warned unwarned; do
    opt=""
    [ "$name" = warned ] && opt='"x-checkpointable": true,'
    write_job "$name.json" <<JSON
{"properties": {$opt "nodeCount": 1, "customToolkitSettings": {"commandLine": "$CL/bin/warn-me --resume latest"},
  $LOGS_JSON, $MOUNT_JSON}}
JSON
done
warned=$(submit --time=1 --batchai-job=warned.json)
unwarned=$(submit --time=1 --batchai-job=unwarned.json)
[ "$(job_field "$warned" Requeue)" = 1 ] || fail "job $warned (x-checkpointable) is not requeueable: $(scontrol show job "$warned")"
[ "$(job_field "$unwarned" Requeue)" = 0 ] || fail "job $unwarned (no opt-in) is requeueable under JobRequeue=0"

st=$(wait_job "$warned" 150)
logs=$(log_dir "$warned" warned)
cat "$logs/execution-n1.log"
[ "$st" = FAILED ] && [ "$(job_field "$warned" ExitCode)" = 3:0 ] ||
    fail "job $warned ended $st, exit $(job_field "$warned" ExitCode) (want FAILED 3:0: warned): $(cat "$logs/stdout.txt" "$logs/stderr.txt")"
assert_grep "attempt 1: SIGUSR1: the time limit is near, passed to the main step" "$logs/execution-n1.log"
assert_grep "^warn-me: started as pid [0-9]* with --resume latest\$" "$logs/stdout.txt"
assert_grep "^warn-me: SIGUSR1 reached pid" "$logs/stdout.txt"

st=$(wait_job "$unwarned" 150)
logs=$(log_dir "$unwarned" unwarned)
[ "$st" = TIMEOUT ] || fail "job $unwarned (no opt-in) ended $st, want TIMEOUT: $(cat "$logs/stdout.txt" "$logs/stderr.txt")"
assert_grep "^warn-me: started as pid [0-9]* with --resume latest\$" "$logs/stdout.txt"
! grep -q "SIGUSR1" "$logs/stdout.txt" "$logs/execution-n1.log" ||
    fail "job $unwarned (no opt-in) was warned: $(cat "$logs/stdout.txt" "$logs/execution-n1.log")"
assert_nodes_idle
pass "x-checkpointable: job $warned's command warned with SIGUSR1 and ended 3 before its limit; job $unwarned, without it, never warned (TIMEOUT)"
