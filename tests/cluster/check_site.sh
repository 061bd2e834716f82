#!/usr/bin/env bash
# batchai-job check-site, as an admin runs it: on a good cluster every check passes on n1 and n2 (exit 0);
# without PrologFlags=Alloc, with job_root's parent writable by a group, with a job_temp that the user can
# write (mode 1777), without image_root or mount_root, without shares_root on the nodes, with an mpi setting
# srun --mpi=list lacks, or a tmpfiles.d line that makes job_temp another user's, it names the problem and
# exits 1. ProctrackType and TaskPlugin are reported as this cluster has them; a job_temp that a user took
# first is moved aside by the prolog and reported. --help says what is checked. Run from a path with a quote
# and "$(...)", it passes that path to its probe step whole, with no shell.
# A node without the plugin is checked in fail_closed.sh, which makes one.
. "$(dirname "$0")/lib.sh"
cluster_start
BAI=$BUILD/bin/batchai-job
[ -x "$BAI" ] || skip "$BAI is not built"
OUT=$CL/check-site.out

# check_site WANT_STATUS: run it as root from $WORK (every node sees it); its output in $OUT.
check_site() {
    local rc=0
    (cd "$WORK" && "$BAI" check-site -p debug) >"$OUT" 2>&1 || rc=$?
    [ "$rc" = "$1" ] || fail "check-site exited $rc, want $1: $(cat "$OUT")"
    ! ls -d "$WORK"/.batchai-check-site-* 2>/dev/null || fail "check-site left its probe directory in $WORK"
}

install -d -m 0755 "$CL/images" # container_runtime=oci (the default): its staged bundles' directory
check_site 0
for n in n1 n2; do
    assert_grep "node $n: ok   the plugin prepared it (built for Slurm " "$OUT"
    assert_grep "node $n: ok   job_root $CL/jobs is root's alone from /" "$OUT"
    assert_grep "node $n: ok   container runtime oci: runc found" "$OUT"
    assert_grep "node $n: ok   job_temp $CL/scratch/batchai is root's and writable by root alone" "$OUT"
    # Node-local or not, by the file system's type as stat(1) reads it.
    assert_grep "node $n: .* job_temp $CL/scratch/batchai is on .*(statfs type 0x$(stat -f -c %t "$CL/scratch/batchai"))" "$OUT"
done
assert_grep "ok   PrologFlags=Alloc" "$OUT"
for n in n1 n2; do
    assert_grep "node $n: ok   mount_root $CL/mounts (AZ_BATCHAI_MOUNT_ROOT) is a directory here" "$OUT"
    assert_grep "node $n: ok   shares_root $CL/shares is a directory here" "$OUT"
    # $CL/scratch is 1777, as /tmp is, and no tmpfiles.d line names $CL/scratch/batchai.
    assert_grep "node $n: warn no tmpfiles.d line makes job_temp $CL/scratch/batchai at boot" "$OUT"
done
assert_grep "ok   srun --mpi=pmix is available" "$OUT"
case $(scontrol show config | sed -n 's/^ProctrackType *= *//p') in
proctrack/cgroup) assert_grep "ok   ProctrackType=proctrack/cgroup" "$OUT" ;;
*) assert_grep "warn ProctrackType=proctrack/.*slurm.conf(5) recommends proctrack/cgroup" "$OUT" ;;
esac
case $(scontrol show config | sed -n 's/^TaskPlugin *= *//p') in
*task/cgroup*) assert_grep "ok   TaskPlugin=.*task/cgroup" "$OUT" ;;
*) assert_grep "warn TaskPlugin=.* lacks task/cgroup" "$OUT" ;;
esac
assert_grep "check-site: all checks passed" "$OUT"
"$BAI" check-site --help >"$CL/help.out" || fail "check-site --help failed"
for w in "-p, --partition PARTITION" "-d, --dir DIR" "ProctrackType" "srun --mpi=list" "mount_root" "tmpfiles.d"; do
    assert_grep "$w" "$CL/help.out"
done

# No shell between check-site and Slurm: run from a path with a space, a quote and "$(...)", its probe step
# runs that path as one word on the nodes, and nothing of it is run as a command.
odd="$CL/bin it's \$(touch pwned)"
install -d -m 0755 "$odd"
install -m 0755 "$BAI" "$odd/batchai-job"
rc=0
(cd "$WORK" && "$odd/batchai-job" check-site -p debug) >"$OUT" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "check-site run from \"$odd\" exited $rc: $(cat "$OUT")"
assert_grep "node n2: ok   the plugin prepared it" "$OUT"
! ls "$WORK/pwned" "$CL/pwned" 2>/dev/null || fail "a shell ran the \$(...) of check-site's path"

# A tmpfiles.d line for job_temp: root's is reported, another user's fails (systemd reads /run/tmpfiles.d).
TMPF=/run/tmpfiles.d/batchai-test-${CL##*/}.conf
trap 'rc=$?; rm -f "$TMPF"; (exit $rc); cluster_stop' EXIT # cluster_stop reports $?
mkdir -p /run/tmpfiles.d
echo "d $CL/scratch/batchai 0755 root root -" >"$TMPF"
check_site 0
assert_grep "node n1: ok   job_temp $CL/scratch/batchai is made at boot, root's ($TMPF: d $CL/scratch/batchai 0755 root root -)" "$OUT"
echo "d $CL/scratch/batchai 0755 $TEST_USER root -" >"$TMPF"
check_site 1
assert_grep "node n2: FAIL $TMPF: \"d $CL/scratch/batchai 0755 $TEST_USER root -\" makes job_temp $CL/scratch/batchai at boot another user's" "$OUT"
rm -f "$TMPF"
# mount_root, then shares_root, missing on the nodes.
rmdir "$CL/mounts"
check_site 1
assert_grep "node n1: FAIL mount_root $CL/mounts (AZ_BATCHAI_MOUNT_ROOT) No such file or directory on this node" "$OUT"
install -d -m 0755 "$CL/mounts"
mv "$CL/shares" "$CL/shares.away"
check_site 1
assert_grep "node n2: FAIL shares_root $CL/shares No such file or directory on this node" "$OUT"
mv "$CL/shares.away" "$CL/shares"
# An MPI plugin this Slurm lacks, in the site's settings (check-site reads them from the plugstack line).
cp "$CL/plugstack.conf" "$CL/plugstack.conf.good"
sed -i '/spank_batchai/s/$/ mpi=nosuchmpi/' "$CL/plugstack.conf"
check_site 1
assert_grep "FAIL srun --mpi=list does not list nosuchmpi, the site's mpi setting" "$OUT"
cp "$CL/plugstack.conf.good" "$CL/plugstack.conf"

# No PrologFlags=Alloc.
sed -i 's/^PrologFlags=Alloc$/#&/' "$CL/slurm.conf"
ctld_restart
check_site 1
assert_grep "lacks Alloc: set PrologFlags=Alloc" "$OUT"
sed -i 's/^#PrologFlags=Alloc$/PrologFlags=Alloc/' "$CL/slurm.conf"
ctld_restart
# From 25.05 a slurmd whose slurm.conf (still) has Alloc waits 40 s for the controller's prolog launch that
# never came, and drains its node: that is this test's controller-only change, not the plugin's doing.
scontrol update nodename=n1,n2 state=resume 2>/dev/null || true

# job_root's parent writable by a group: the plugin refuses it on every node, and the check says so.
chmod 0775 "$CL"
check_site 1
assert_grep "is writable by group or others" "$OUT"
assert_grep "FAIL node n1: the probe step did not report it prepared" "$OUT"
chmod 0755 "$CL"
# A job_temp the user can write, world-writable and sticky like /tmp: the prolog refuses it on every node,
# and check-site shows the prolog's words naming job_temp and the node.
chmod 1777 "$CL/scratch/batchai"
check_site 1
for n in n1 n2; do
    assert_grep "FAIL node $n: the probe step did not report it prepared" "$OUT"
    assert_grep "preparing node $n failed: job_temp $CL/scratch/batchai cannot be used: " "$OUT"
done
assert_grep "$CL/scratch/batchai is writable by group or others (mode 1777)" "$OUT"
# check-node's own job_temp check, which a probe step reaches only on nodes whose prolog passed it, run
# here by hand: it fails in exactly the prolog's words.
check_node_by_hand() {
    local said=$1 rc=0
    SLURMD_NODENAME=n1 "$BAI" check-node "$CL/jobs" "$CL/scratch/batchai" none "$CL/images" >"$CL/check-node.out" || rc=$?
    [ $rc = 1 ] || fail "check-node exited $rc with a broken job_temp: $(cat "$CL/check-node.out")"
    grep -qF "node n1: FAIL $said" "$CL/check-node.out" || fail "check-node did not say what the prolog said ($said): $(cat "$CL/check-node.out")"
}
check_node_by_hand "$(sed -n "s/.*preparing node n1 failed: //p" "$OUT" | head -n 1)"
chmod 0755 "$CL/scratch/batchai"
# The user's own job_temp: check-node refuses it in the prolog's words, the prolog moves it aside and makes
# its own (hostile_job_temp.sh), and check-site then warns of what was moved.
chown "$TEST_USER:" "$CL/scratch/batchai"
check_node_by_hand "job_temp $CL/scratch/batchai cannot be used: $CL/scratch/batchai is owned by uid $TEST_UID, not root"
check_site 0
assert_grep "node n1: warn $CL/scratch/batchai.taken-by-uid-$TEST_UID.[0-9]*: a user took job_temp's name first" "$OUT"
[ "$(stat -c %U "$CL/scratch/batchai")" = root ] || fail "the prolog did not make job_temp root's again"
rm -rf "$CL/scratch/batchai".taken-by-uid-*
# No image_root for container_runtime=oci.
rmdir "$CL/images"
check_site 1
assert_grep "node n2: FAIL image_root $CL/images is missing" "$OUT"
install -d -m 0755 "$CL/images"
check_site 0
assert_nodes_idle
pass "check-site passed a good cluster and named a missing PrologFlags=Alloc, a group-writable job_root parent, a job_temp of mode 1777, one of the user's (moved aside), a user's tmpfiles.d line, missing image_root, mount_root and shares_root, and an mpi plugin srun lacks"
