#!/usr/bin/env bash
# The job temp (AZ_BATCHAI_JOB_TEMP) is node-local scratch: <job_temp>/<jobid>.<node>, made by root in job_temp, a
# root-owned directory under a sticky parent that users can write (here $CL/scratch, mode 1777, as /tmp is;
# by default /tmp/batchai).
#  1. A user takes job_temp's name in the sticky parent first (slurmd made it at its start; the admin's
#     clean-up of /tmp removed it): as a link to a directory of theirs, a FIFO, a directory of their own.
#     The prolog moves their entry aside, untouched and still theirs (<job_temp>.taken-by-uid-<uid>.<time>,
#     named in slurmd's log), makes job_temp root's again and the job runs: one user cannot stop every Batch
#     AI job on the node. Root never puts anything behind the link.
#  2. Two jobs at once on one host (n1 and n2 share it here) each get a temp of their own, the user's, 0700,
#     and the epilog removes both; the two nodes of one job get one each (azureml.sh's download of the same
#     input on both nodes raced in one shared directory before).
# (hostile_epilog.sh and hostile_epilog_modes.sh leave links, a mount and unremovable trees in it.)
. "$(dirname "$0")/lib.sh"
cluster_start
BASE=$CL/scratch/batchai
[ "$(stat -c '%U %a' "$BASE")" = "root 755" ] || fail "slurmd did not make $BASE at its start: $(ls -la "$CL/scratch")"
write_job t.json <<JSON
{"properties": {"nodeCount": 1, $LOGS_JSON, $MOUNT_JSON,
  "customToolkitSettings": {"commandLine": "echo \"temp=\$AZ_BATCHAI_JOB_TEMP \$(stat -c '%U %a' \$AZ_BATCHAI_JOB_TEMP)\"; touch \$AZ_BATCHAI_JOB_TEMP/mine-\$SLURM_JOB_ID.\$SLURMD_NODENAME; while [ ! -e $WORK/go ]; do sleep 0.1; done; echo \"files: \$(ls \$AZ_BATCHAI_JOB_TEMP)\""}}}
JSON

# 1. The name taken first.
as_user "mkdir -p theirs"
squat_case() {
    local what=$1 make=$2 type=$3 id st aside
    rm -rf "$BASE" "$BASE".taken-* # root's empty one first, then what the last case left (a link goes, not its target)
    as_user "$make"
    id=$(submit --batchai-job=t.json)
    st=$(wait_job "$id")
    [ "$st" = COMPLETED ] || fail "job $id with job_temp taken as $what ended $st: $(cat "$(log_dir "$id" t)/stderr.txt")"
    assert_grep "^temp=$BASE/$id.n[12] $TEST_USER 700$" "$(log_dir "$id" t)/stdout.txt"
    [ "$(stat -c '%U %a %F' "$BASE")" = "root 755 directory" ] || fail "$BASE is not root's again: $(ls -ld "$BASE")"
    aside=$(find "$CL/scratch" -maxdepth 1 -name "batchai.taken-by-uid-$(id -u "$TEST_USER").*")
    [ -n "$aside" ] || fail "the user's $what is not aside: $(ls -la "$CL/scratch")"
    [ "$(stat -c '%U %F' "$aside")" = "$TEST_USER $type" ] || fail "$aside changed: $(ls -ld "$aside")"
    [ -z "$(ls -A "$WORK/theirs")" ] || fail "root made something behind the link: $(ls -la "$WORK/theirs")"
    grep -q "job_temp $BASE (.* of uid $(id -u "$TEST_USER")) was moved aside to $aside" "$CL"/log/slurmd-n*.log ||
        fail "slurmd's log does not say that $BASE was moved aside to $aside"
    assert_nodes_idle
    echo "job_temp taken as $what: job $id ran; $(basename "$aside") kept"
}
touch "$WORK/go"
squat_case "a link to the user's directory" "ln -s $WORK/theirs $BASE" "symbolic link"
squat_case "a FIFO" "mkfifo $BASE" "fifo"
squat_case "a directory of the user's" "mkdir $BASE" "directory"
rm -rf "$BASE" "$BASE".taken-* "$WORK/go"
# With the name free again, the prolog makes job_temp itself (root's, 0755).

# 2. Two jobs at once, one on each node of this host; then one job on both nodes.
a=$(submit --batchai-job=t.json -w n1)
b=$(submit --batchai-job=t.json -w n2)
temps="$BASE/$a.n1 $BASE/$b.n2"
for t in $temps; do
    for i in $(seq 300); do [ -e "$t/mine-${t##*/}" ] && break; sleep 0.1; done
    [ -e "$t/mine-${t##*/}" ] || fail "no job wrote $t/mine-${t##*/}: $(ls -la "$BASE"; cat "$(log_dir "$a" t)/stderr.txt" "$(log_dir "$b" t)/stderr.txt" 2>/dev/null)"
done
[ "$(stat -c '%U %a' "$BASE")" = "root 755" ] || fail "the prolog did not remake $BASE as root's: $(ls -ld "$BASE")"
touch "$WORK/go"
for id in "$a" "$b"; do
    [ "$(wait_job "$id")" = COMPLETED ] || fail "job $id failed: $(cat "$(log_dir "$id" t)/stderr.txt")"
done
for t in $temps; do
    id=${t##*/}; id=${id%.n?}
    out=$(log_dir "$id" t)/stdout.txt
    assert_grep "^temp=$t $TEST_USER 700$" "$out"
    assert_grep "^files: mine-${t##*/}$" "$out"
done
write_job both.json <<JSON
{"properties": {"nodeCount": 2, $LOGS_JSON, $MOUNT_JSON,
  "customMpiSettings": {"commandLine": "echo \"\$SLURMD_NODENAME temp=\$AZ_BATCHAI_JOB_TEMP \$(stat -c '%U %a' \$AZ_BATCHAI_JOB_TEMP)\"", "processCount": 2}}}
JSON
c=$(submit --batchai-job=both.json)
[ "$(wait_job "$c")" = COMPLETED ] || fail "job $c failed: $(cat "$(log_dir "$c" both)/stderr.txt")"
for n in n1 n2; do
    assert_grep "^$n temp=$BASE/$c.$n $TEST_USER 700$" "$(log_dir "$c" both)/stdout.txt"
    temps="$temps $BASE/$c.$n"
done
assert_nodes_idle
for t in $temps; do
    for i in $(seq 50); do [ -e "$t" ] || break; sleep 0.1; done
    [ ! -e "$t" ] || fail "the epilog left $t"
done
! grep -h "could not remove" "$CL"/log/slurmd-n*.log || fail "slurmd logged a failed clean-up"
pass "job_temp taken first (link, FIFO, user's directory) moved aside and the jobs ran; two jobs on one host had temps of their own, 0700, removed at the end"
