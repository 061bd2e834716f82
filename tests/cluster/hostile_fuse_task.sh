#!/usr/bin/env bash
# Hostile user vs the task's read of the job file: the FUSE file system (tests/cluster/fuse_hang.c) serves
# the file to its first open, the prolog's, and never answers the task's. The task reads it in a child it
# kills at 20 s, so the job fails with the cause instead of hanging until Slurm kills the task, fails to,
# and drains the node.
. "$(dirname "$0")/fuse_case.bash"
hang_case first "job.json: reading it took longer than 20 s (a file system that does not answer?)"
pass "a job file whose task read never answers failed its job with the cause; nodes idle"
