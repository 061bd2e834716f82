#!/usr/bin/env bash
# batchai-job check-site, as an admin runs it: on a good cluster every check passes on n1 and n2 (exit 0);
# without PrologFlags=Alloc, with job_root's parent writable by a group, with a job_temp that the user can
# write (mode 1777, or the user's own) or without image_root, it names the problem and exits 1.
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
assert_grep "check-site: all checks passed" "$OUT"

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
# A job_temp the user can write, world-writable and sticky like /tmp, then the user's own: the prolog refuses
# it on every node, and check-site shows the prolog's words naming job_temp and the node.
for broken in "chmod 1777" "chown $TEST_USER:"; do
    $broken "$CL/scratch/batchai"
    check_site 1
    for n in n1 n2; do
        assert_grep "FAIL node $n: the probe step did not report it prepared" "$OUT"
        assert_grep "preparing node $n failed: job_temp $CL/scratch/batchai cannot be used: " "$OUT"
    done
    case $broken in
    chmod*) assert_grep "$CL/scratch/batchai is writable by group or others (mode 1777)" "$OUT" ;;
    chown*) assert_grep "$CL/scratch/batchai is owned by uid $TEST_UID, not root" "$OUT" ;;
    esac
    # check-node's own job_temp check, which a probe step reaches only on nodes whose prolog passed it, run
    # here by hand: it fails in exactly the prolog's words.
    said=$(sed -n "s/.*preparing node n1 failed: //p" "$OUT" | head -n 1)
    rc=0
    SLURMD_NODENAME=n1 "$BAI" check-node "$CL/jobs" "$CL/scratch/batchai" none "$CL/images" >"$CL/check-node.out" || rc=$?
    [ $rc = 1 ] || fail "check-node exited $rc with a broken job_temp: $(cat "$CL/check-node.out")"
    grep -qxF "node n1: FAIL $said" "$CL/check-node.out" || fail "check-node did not say what the prolog said ($said): $(cat "$CL/check-node.out")"
    chmod 0755 "$CL/scratch/batchai"
    chown root:root "$CL/scratch/batchai"
done
# No image_root for container_runtime=oci.
rmdir "$CL/images"
check_site 1
assert_grep "node n2: FAIL image_root $CL/images is missing" "$OUT"
install -d -m 0755 "$CL/images"
check_site 0
assert_nodes_idle
pass "check-site passed a good cluster and named a missing PrologFlags=Alloc, a group-writable job_root parent, a job_temp of mode 1777 and one of the user's, and a missing image_root"
