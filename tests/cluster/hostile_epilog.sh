#!/usr/bin/env bash
# Hostile user vs the epilog's clean-up (security finding 6): the job leaves, inside its job directory, a
# link to a directory of the user's, a link to root's victim directory, a hard link to a file of the
# user's, and (where this host lets root bind-mount) a mount of another directory, all in its job temp
# (<job_temp>/<jobid>.<node>). The epilog removes it as the user, by fds, following no link and crossing no mount:
# what lies behind them all survives, and the directory itself goes (moved aside in job_temp when a mount
# point kept it).
. "$(dirname "$0")/lib.sh"
cluster_start
victim_make
as_user "mkdir -p precious && echo keep >precious/file && echo keep >kept.txt"
install -d -m 0755 "$CL/mnt-src" && echo keep >"$CL/mnt-src/file"
write_job e.json <<JSON
{"properties": {"nodeCount": 1, $LOGS_JSON, $MOUNT_JSON,
  "customToolkitSettings": {"commandLine": "cd \$AZ_BATCHAI_JOB_TEMP && ln -s $WORK/precious p && ln -s $VICTIM v && ln $WORK/kept.txt k && mkdir m && touch ready && while [ ! -e $WORK/go ]; do sleep 0.1; done"}}}
JSON
id=$(submit --batchai-job=e.json)
for i in $(seq 300); do
    temp=$(ls -d "$CL/scratch/batchai/$id".n? 2>/dev/null | head -n 1 || true)
    [ -n "$temp" ] && [ -e "$temp/ready" ] && break
    sleep 0.1
done
[ -e "$temp/ready" ] || fail "job $id did not start: $(cat "$(log_dir "$id" e)/stderr.txt" 2>/dev/null)"
mounted=0
# On the job's node: in hosts mode, a mount made here would not reach the node's epilog.
node=${temp##*.}
if on_host "$node" mount --bind "$CL/mnt-src" "$temp/m" 2>/dev/null; then mounted=1; fi
touch "$WORK/go"
[ "$(wait_job "$id")" = COMPLETED ] || fail "job $id failed: $(cat "$(log_dir "$id" e)/stderr.txt")"
assert_nodes_idle
if [ $mounted = 1 ]; then
    [ "$(cat "$CL/mnt-src/file" 2>/dev/null)" = keep ] || fail "the epilog deleted through a mount point"
    # The mount point kept the job temp: root moved it aside, so that no later job with this id finds it,
    # and said so.
    stale=$(ls -d "$CL/scratch/batchai/.stale-${temp##*/}-"* 2>/dev/null | head -n 1)
    [ -n "$stale" ] && [ -d "$stale/m" ] || fail "what the mount kept was not moved aside: $(ls -a "$CL/scratch/batchai")"
    on_host "$node" umount "$stale/m" || true
    [ ! -e "$temp" ] || fail "the job temp $temp is still there for the next job $id"
    grep -q "could not remove all of $temp; what is left is in $stale" "$CL"/log/slurmd-n*.log ||
        fail "slurmd's log does not say where the leftovers went"
else
    echo "note: bind mounts are not allowed here; the mount case was not exercised"
fi
[ "$(cat "$WORK/precious/file")" = keep ] || fail "the epilog followed a link into the user's directory"
[ "$(cat "$WORK/kept.txt")" = keep ] || fail "the epilog destroyed a hard-linked file"
assert_victim_unchanged
[ $mounted = 1 ] || [ ! -e "$temp" ] || fail "the job temp $temp was left: $(ls -la "$temp")"
[ ! -e "$CL/jobs/$id" ] || fail "the job directory $CL/jobs/$id was left: $(ls -la "$CL/jobs/$id")"
pass "the epilog removed the job temp without following links or crossing a mount"
