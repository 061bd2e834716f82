#!/usr/bin/env bash
# Hostile user vs the tasks' use of the job file: the FUSE file system (tests/cluster/fuse_hang.c) serves the
# file to its first open, the prolog's, and never answers another. The tasks must not read the user's path
# at all: they use the copy the prolog verified and kept in root's job_root. A task that read the path again
# would be stuck in the kernel's FUSE wait, unkillable, and with proctrack/cgroup slurmstepd would wait for
# it until UnkillableStepTimeout and drain the node ("Kill task failed").
. "$(dirname "$0")/fuse_case.bash"
fuse_job first
[ "$ST" = COMPLETED ] || { cat "$ERR"; fail "job $ID ended $ST"; }
assert_grep main-ran "$(dirname "$ERR")/stdout.txt"
opens=$(grep -c '^open ' "$CL/fuse.out" || true)
[ "$opens" = 1 ] || { cat "$CL/fuse.out"; fail "the job file was opened $opens times; only the prolog may open it"; }
assert_no_drain
# The copy is gone with the job (the epilog may still run when the job shows COMPLETED): nothing of it stays.
for i in $(seq 50); do ls -A "$CL/jobs" | grep -q "^$ID\." || break; sleep 0.2; done
! ls -A "$CL/jobs" | grep -q "^$ID\." || fail "job_root still holds files of job $ID: $(ls -A "$CL/jobs")"
pass "a job file whose later reads never answer: opened once, by the prolog; the job ran from its copy in $TOOK s; nodes idle"
