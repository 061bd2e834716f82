#!/usr/bin/env bash
# Fail closed on a node without the plugin: node n2 runs configless (slurmd --conf-server) and, in each
# layout below, starts with no spank_batchai at all, as a site's node does. A job never runs there
# unprepared: the preparation and the main step each stop on n2 with the plugin's message naming the node,
# a batch step on n2 cannot start (its output directory is the plugin's to make), the job fails, and no node
# is drained. batchai-job check-site names n2 and the configless pitfall.
#   include    plugstack.conf (shipped by configless) says `include plugstack.conf.d/*.conf`, relative to
#              itself: n2's copy lives in its config cache, which has no plugstack.conf.d.
#   readme     the README's layout, `include <dir>/plugstack.conf.d/*.conf` with an absolute directory that
#              n2 does not have (hidden from n2's slurmd by an empty tmpfs in a mount namespace of its own).
#   absolute   PlugStackConfig=<absolute path> in slurm.conf, missing on n2 (hidden the same way).
. "$(dirname "$0")/lib.sh"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
unshare -m true 2>/dev/null || skip_for root "cannot make a mount namespace here (unshare -m)"
cluster_start

PLUGLINE=$(cat "$CL/plugstack.conf")
[ -n "$PLUGLINE" ] || fail "localcluster wrote no plugstack line"
install -d -m 0755 "$CL/images" # for check-site: container_runtime=oci's bundles
SITE=$CL/site # the directory n2 lacks in the readme and absolute layouts
install -d -m 0755 "$SITE"
# Configless, and the plugstack path is what each layout says.
sed -i '/^PlugStackConfig=/d' "$CL/slurm.conf"
echo "SlurmctldParameters=enable_configless" >>"$CL/slurm.conf"

n2_stop() { stop_daemon slurmd-n2; }
# n2_start HIDE: slurmd -N n2 configless, from slurmctld's port, in a mount namespace of its own (its steps
# inherit it). Before it has the configuration, slurmd knows only munge's default socket: there, on an empty
# tmpfs over /run, a link leads to the cluster's munged. HIDE (a directory, or "") is covered by an empty
# tmpfs too, so n2 and its steps do not see what lies there.
n2_start() {
    local port i s
    port=$(sed -n 's/^SlurmctldPort=//p' "$CL/slurm.conf")
    rm -rf "$CL/spool/n2/conf-cache"
    # shellcheck disable=SC2016
    on_host n2 unshare -m --propagation private /bin/sh -c 'set -e; mount -t tmpfs -o size=1m,mode=0755 none /run
        mkdir /run/munge; ln -s "$1" /run/munge/munge.socket.2
        if [ -n "$2" ]; then mount -t tmpfs -o size=1m,mode=0755 none "$2"; fi
        shift 2; exec "$@"' n2-start "$CL/munge/munge.socket" "$1" slurmd -N n2 --conf-server "$CTLD_HOST:$port" ||
        fail "slurmd -N n2 --conf-server did not start"
    for ((i = 0; i < 300; i++)); do
        s=$(sinfo -h -n n2 -o %T 2>/dev/null || true)
        [ "$s" = idle ] && break
        sleep 0.1
    done
    [ "$s" = idle ] || fail "n2 is $s after a configless start"
}

write_job main.json <<JSON
{"properties": {"nodeCount": 2, $LOGS_JSON, $MOUNT_JSON,
  "customMpiSettings": {"processCount": 2, "commandLine": "touch $SHARE/main-ran-\$SLURM_JOB_ID-\$SLURMD_NODENAME"}}}
JSON
write_job prep.json <<JSON
{"properties": {"nodeCount": 2, $LOGS_JSON, $MOUNT_JSON,
  "jobPreparation": {"commandLine": "touch $SHARE/prep-ran-\$SLURM_JOB_ID-\$SLURMD_NODENAME"},
  "customMpiSettings": {"processCount": 2, "commandLine": "touch $SHARE/main-ran-\$SLURM_JOB_ID-\$SLURMD_NODENAME"}}}
JSON
write_job one.json <<JSON
{"properties": {"nodeCount": 1, $LOGS_JSON, $MOUNT_JSON,
  "customToolkitSettings": {"commandLine": "touch $SHARE/main-ran-\$SLURM_JOB_ID-\$SLURMD_NODENAME"}}}
JSON

# expect_refused LAYOUT NAME ARGS...: the job fails with the plugin's message for n2, and nothing of it ran
# on n2.
expect_refused() {
    local layout=$1 name=$2 id st logs
    shift 2
    id=$(submit --batchai-job="$name.json" "$@")
    st=$(wait_job "$id")
    logs=$(log_dir "$id" "$name")
    [ "$st" = FAILED ] || fail "$layout: job $id ($name) ended $st on a node without the plugin, want FAILED"
    if [ "$name" = one ]; then
        # The batch step itself on n2: its output directory is the plugin's to make. Up to 24.11 Slurm cannot
        # open the output there and nothing starts; 26.05 makes the output's directory itself, and the script
        # stops at its first line, the node check (exit 1), with the plugin's message in stderr.txt.
        case $(job_field "$id" Reason) in
        JobLaunchFailure)
            [ ! -e "$logs" ] || fail "$layout: job $id: $logs exists, so the batch script could have run" ;;
        NonZeroExitCode)
            [ "$(job_field "$id" ExitCode)" = 1:0 ] ||
                fail "$layout: job $id's batch step on n2 ended $(job_field "$id" ExitCode), want 1:0 (the node check)"
            assert_grep "batchai: job $id: node n2 was not prepared by the spank_batchai plugin" "$logs/stderr.txt" ;;
        *) fail "$layout: job $id's batch step on n2: reason $(job_field "$id" Reason), want JobLaunchFailure" ;;
        esac
    else
        assert_grep "batchai: job $id: node n2 was not prepared by the spank_batchai plugin" "$logs/stderr.txt"
        assert_grep "configless" "$logs/stderr.txt"
    fi
    ! ls "$SHARE"/*-ran-"$id"-n2 2>/dev/null || fail "$layout: job $id ($name) ran on n2 without the plugin"
    [ "$name" != prep ] || ! ls "$SHARE"/main-ran-"$id"-* 2>/dev/null ||
        fail "$layout: job $id's main step ran after n2 refused the preparation"
    assert_nodes_idle
}

n2_stop
for layout in include readme absolute; do
    rm -rf "$CL/plugstack.conf.d" "${SITE:?}"/*
    case $layout in
    include)
        install -d -m 0755 "$CL/plugstack.conf.d"
        echo "$PLUGLINE" >"$CL/plugstack.conf.d/batchai.conf"
        echo "include plugstack.conf.d/*.conf" >"$CL/plugstack.conf"
        hide= ;;
    readme)
        install -d -m 0755 "$SITE/plugstack.conf.d"
        echo "$PLUGLINE" >"$SITE/plugstack.conf.d/batchai.conf"
        echo "include $SITE/plugstack.conf.d/*.conf" >"$CL/plugstack.conf"
        hide=$SITE ;;
    absolute)
        echo "$PLUGLINE" >"$SITE/plugstack.conf"
        : >"$CL/plugstack.conf"
        echo "PlugStackConfig=$SITE/plugstack.conf" >>"$CL/slurm.conf"
        hide=$SITE ;;
    esac
    chmod -R go-w "$CL/plugstack.conf" "$SITE"
    ctld_restart
    # n1's slurmd reads the changed slurm.conf too, as an admin makes it: from 25.05 steps take their
    # configuration from slurmd, not from the file, so without this n1 kept the old plugstack path.
    scontrol reconfigure || fail "$layout: scontrol reconfigure"
    n2_start "$hide"
    # The layout is real: n1 and sbatch have the plugin, n2 does not.
    # The layout is real: n2 took its configuration from slurmctld, and what it got names no plugin.
    assert_file "$CL/spool/n2/conf-cache/slurm.conf"
    ! grep -qs "spank_batchai" "$CL/spool/n2/conf-cache/plugstack.conf" ||
        fail "$layout: n2's cached plugstack.conf names the plugin itself"
    expect_refused "$layout" main
    expect_refused "$layout" prep
    expect_refused "$layout" one --nodelist=n2
    # The admin's check names n2 and the configless pitfall.
    rc=0
    (cd "$WORK" && "$BUILD/bin/batchai-job" check-site -p debug) >"$CL/check-site.out" 2>&1 || rc=$?
    [ $rc = 1 ] || fail "$layout: check-site exited $rc with n2 lacking the plugin: $(cat "$CL/check-site.out")"
    assert_grep "node n2: FAIL the plugin did not run here" "$CL/check-site.out"
    assert_grep "node n1: ok   the plugin prepared it" "$CL/check-site.out"
    assert_grep "warn configless: " "$CL/check-site.out"
    # The same file on n1 alone runs: the refusal is n2's.
    id=$(submit --batchai-job=one.json --nodelist=n1)
    st=$(wait_job "$id")
    [ "$st" = COMPLETED ] || fail "$layout: job $id on n1 ended $st"
    assert_file "$SHARE/main-ran-$id-n1"
    n2_stop
    sed -i '/^PlugStackConfig=/d' "$CL/slurm.conf"
done
# Back to n2 with the plugin (cluster_stop stops it from its pid file).
: >"$CL/plugstack.conf"
echo "$PLUGLINE" >"$CL/plugstack.conf"
ctld_restart
n2_start ""
id=$(submit --batchai-job=main.json)
st=$(wait_job "$id")
[ "$st" = COMPLETED ] || fail "job $id ended $st on two nodes with the plugin"
assert_file "$SHARE/main-ran-$id-n2"
pass "jobs on a configless node without the plugin failed with its message in the include, readme and absolute layouts, and check-site named n2; nodes idle"
