#!/usr/bin/env bash
# Hostile user vs the prolog's read of the job file: after sbatch validated it, the job file's directory
# becomes a FUSE file system whose reads never answer (tests/cluster/fuse_hang.c). The prolog reads it in a
# child of the user's that it kills at 10 s; the child stays stuck in the kernel's FUSE wait, unkillable,
# until the server answers or dies. The prolog must still return then: the child holds nothing of slurmd's
# (from 23.11 slurmd reads the prolog's stdout until EOF, so an inherited stdout held it until the FUSE
# server died: "prolog ran for 129 seconds" on 26.05.3), and the job fails with the cause, nodes idle.
. "$(dirname "$0")/fuse_case.bash"
hang_case "" "preparing node n[12] failed: .*job.json: reading it took longer than 10 s (a file system that does not answer?)"
# How long the prolog ran, as slurmd measured it: slurmd logs it once it reaches MessageTimeout/2 (10 s in
# localcluster), which a 10 s read always does; it must be within the prolog's own deadline (20 s,
# BAI_PROLOG_DEADLINE_MS), while the FUSE server still holds the reader.
ran=$(grep -ahE "prolog for (job $ID|JobId=$ID)( |$).*ran for [0-9]+ seconds" "$CL"/log/slurmd-n*.log |
      sed -E 's/.*ran for ([0-9]+) seconds.*/\1/' | sort -n | tail -1)
[ -n "$ran" ] || fail "slurmd logged no 'prolog for job $ID ran for N seconds' line (a 10 s read should make one)"
[ "$ran" -le 20 ] || fail "the prolog of job $ID returned only after $ran s, past its 20 s deadline"
echo "slurmd: the prolog of job $ID ran for $ran s"
pass "a job file whose prolog read never answers failed its job with the cause; the prolog returned in $ran s; nodes idle"
