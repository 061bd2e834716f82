# tests/cluster/lib.sh: shared by the cluster scenario tests (sourced). Each test program starts its own
# throwaway cluster with contrib/localcluster (munged, slurmctld, two slurmd; it starts in well under a
# second), runs its scenario as an unprivileged user, and stops exactly the daemons it started on any exit.
# On failure the cluster's logs are printed; the directory is kept only when BATCHAI_KEEP_CLUSTER=1.
# Which Slurm (make check-cluster sets these; see tests/cluster/cluster.mk):
#   SLURM_PREFIX=DIR     the Slurm installed under DIR: its daemons, and its commands for root and the user
#                        (default: the Slurm on PATH, Debian's)
#   BATCHAI_PLUGIN=SO    the plugin built against that Slurm (default: $BUILD/lib/spank_batchai.so)
#   BATCHAI_CGROUP=1     the cluster tracks and confines jobs with proctrack/cgroup and task/cgroup
#   BATCHAI_HOSTS=1      the nodes are separate network hosts (localcluster --hostnet): the test re-runs
#                        itself on the submit host ctl of a fresh hostnet set of its own
#                        (contrib/localcluster/hostnet) and removes the set when it ends, however it ends
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
LC=$TOP/contrib/localcluster/localcluster
PLUGIN=${BATCHAI_PLUGIN:-$BUILD/lib/spank_batchai.so}
# The user's PATH in every job: the system's, after the chosen Slurm's commands.
USER_PATH=/usr/local/bin:/usr/bin:/bin
if [ -n "${SLURM_PREFIX:-}" ]; then
    [ -x "$SLURM_PREFIX/sbin/slurmctld" ] || { echo "FAIL: SLURM_PREFIX=$SLURM_PREFIX has no sbin/slurmctld" >&2; exit 1; }
    export PATH=$SLURM_PREFIX/sbin:$SLURM_PREFIX/bin:$PATH
    USER_PATH=$SLURM_PREFIX/bin:$USER_PATH
fi
TEST_USER=batchai-test
NAME=$(basename "$0" .sh)

skip() { echo "SKIP(dep): $*"; exit 77; }
skip_for() { local what=$1; shift; echo "SKIP($what): $*"; exit 77; }
. "$TOP/tests/lib/assert.bash"
pass() { echo "PASS: $NAME: $*"; }

[ "$(id -u)" -eq 0 ] || skip_for root "needs root to start munged, slurmctld and slurmd"
for p in munged slurmctld slurmd sbatch runuser; do
    command -v "$p" >/dev/null || skip "$p is not installed (contrib/install-deps.sh)"
done
[ -f "$PLUGIN" ] || skip "$PLUGIN is not built (it needs Slurm's headers: libslurm-dev${BATCHAI_JOB_MISSING:+, and $BATCHAI_JOB_MISSING})"
HOSTNET=$TOP/contrib/localcluster/hostnet

# Hosts mode: the program again, as a child on ctl of a set of its own (the nodes n1 and n2 as hosts). This
# process stays in the machine's namespaces, where the set can be removed whatever happens to the child:
# it forwards INT and TERM, and removes the set at its exit (a SIGKILLed child leaves nothing).
if [ "${BATCHAI_HOSTS:-0}" = 1 ] && [ -z "${BATCHAI_HOSTS_SET:-}" ]; then
    for p in ip nsenter unshare; do command -v "$p" >/dev/null || skip "$p is not installed (hosts mode)"; done
    "$HOSTNET" gc >/dev/null 2>&1 || true
    BATCHAI_HOSTS_SET=ct$$
    "$HOSTNET" up "$BATCHAI_HOSTS_SET" "${BATCHAI_HOSTS_NODES:-2}" >/dev/null || fail "hostnet up failed"
    trap '"$HOSTNET" down "$BATCHAI_HOSTS_SET"' EXIT
    export BATCHAI_HOSTS_SET
    "$HOSTNET" exec "$BATCHAI_HOSTS_SET" ctl "$0" "$@" &
    hosts_child=$!
    trap 'kill -TERM "$hosts_child" 2>/dev/null || true' INT TERM
    hosts_rc=0
    wait "$hosts_child" || hosts_rc=$?
    # A forwarded signal interrupts wait (128 + signal): wait again for the child's own status.
    while kill -0 "$hosts_child" 2>/dev/null; do hosts_rc=0; wait "$hosts_child" || hosts_rc=$?; done
    exit "$hosts_rc"
fi

# root_tree DIR: is DIR a tree root alone can write, from / down, with no symbolic link on the way? The
# prolog runs batchai-plan, the plugin's neighbour, only from such a directory (node/rootfs.c).
root_tree() {
    local d
    d=$(cd "$1" 2>/dev/null && pwd -L) || return 1
    while :; do
        [ ! -L "$d" ] && [ "$(stat -c %u "$d")" = 0 ] && [ $((0$(stat -c %a "$d") & 022)) = 0 ] || return 1
        [ "$d" = / ] && return 0
        d=$(dirname "$d")
    done
}

# A build the test user cannot reach (a checkout in /root, whose mode is 0700), or one in a tree others may
# write (a checkout in /tmp), from where the prolog would not run batchai-plan: what users and nodes load
# (bin/, lib/, the plugin and its batchai-plan) is copied to a directory of /var/lib/batchai-test that BUILD
# then names, its other entries links to the build (run by root). Removed at exit (cluster_stop, or the trap
# here).
STAGE=""
"$LC" adduser "$TEST_USER" >/dev/null
if ! runuser -u "$TEST_USER" -- test -r "$PLUGIN" -a -x "$BUILD/bin" 2>/dev/null ||
    ! root_tree "$(dirname "$PLUGIN")"; then
    install -d -m 0755 /var/lib/batchai-test
    STAGE=$(mktemp -d /var/lib/batchai-test/build.XXXXXX)
    chmod 0755 "$STAGE"
    for f in "$BUILD"/*; do
        case ${f##*/} in bin | lib) cp -a "$f" "$STAGE/" ;; *) ln -s "$f" "$STAGE/" ;; esac
    done
    install -m 0755 "$PLUGIN" "$STAGE/spank_batchai.so"
    install -m 0755 "$(dirname "$PLUGIN")/batchai-plan" "$STAGE/batchai-plan"
    PLUGIN=$STAGE/spank_batchai.so BUILD=$STAGE
    trap 'rm -rf "$STAGE"' EXIT
    echo "the build is out of $TEST_USER's reach or in a tree others may write: its bin/, lib/, plugin and batchai-plan copied to $STAGE"
fi

LC_OPTS=()
[ -z "${SLURM_PREFIX:-}" ] || LC_OPTS+=(--slurm "$SLURM_PREFIX")
[ -z "${BATCHAI_HOSTS_SET:-}" ] || LC_OPTS+=(--hostnet "$BATCHAI_HOSTS_SET")
[ "${BATCHAI_CGROUP:-0}" = 0 ] || LC_OPTS+=(--cgroup)
echo "slurm: $(slurmctld -V) ($(command -v slurmctld)), plugin $PLUGIN, localcluster ${LC_OPTS[*]}"

# on_host NODE CMD...: CMD (as root) on node NODE's host: there in hosts mode, else here. CTLD_HOST:
# slurmctld's host as the nodes reach it.
on_host() {
    local node=$1
    shift
    if [ -n "${BATCHAI_HOSTS_SET:-}" ]; then "$HOSTNET" exec "$BATCHAI_HOSTS_SET" "$node" "$@"; else "$@"; fi
}
CTLD_HOST=localhost
[ -z "${BATCHAI_HOSTS_SET:-}" ] || CTLD_HOST=ctl

# lc_start ARGS...: localcluster start with the chosen Slurm and cgroup setting; ARGS as localcluster's.
lc_start() { "$LC" start "${LC_OPTS[@]}" "$@"; }

# core_report: where a job's process crashed (as_user's jobs may leave a core in their working directory):
# each core under $CL with the program, and the registers and every thread's stack as gdb reads them. Open
# MPI's own report of a jump through a null pointer stops at the signal frame; gdb unwinds past it. The
# core is the user's file: file and gdb read it as the user, not as root.
core_report() {
    local c exe desc
    find "$CL" -xdev -type f \( -name core -o -name 'core.[0-9]*' \) -size +0 2>/dev/null | head -n 3 | while read -r c; do
        desc=$(runuser -u "$TEST_USER" -- file -b "$c" 2>/dev/null)
        echo "---- core $c: ${desc:0:300}"
        command -v gdb >/dev/null || { echo "(gdb is not installed: no backtrace)"; continue; }
        exe=$(echo "$desc" | sed -n "s/.*execfn: '\([^']*\)'.*/\1/p")
        timeout 60 runuser -u "$TEST_USER" -- gdb -nx -batch -q ${exe:+"$exe"} -c "$c" -ex 'info registers rip rsp' \
            -ex 'thread apply all bt 12' 2>&1 | grep -v '^\[New LWP\|^warning: \|^$' | head -n 100
    done
}

CL=""
cluster_stop() {
    local rc=$?
    if [ -n "$CL" ]; then
        if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
            for f in "$CL"/log/*.log; do echo "---- $f"; tail -n 25 "$f"; done >&2
            core_report >&2
        fi
        "$LC" stop "$CL" >/dev/null || true
        if [ "${BATCHAI_KEEP_CLUSTER:-0}" = 1 ]; then echo "kept $CL" >&2; else rm -rf "$CL"; fi
    fi
    [ -z "$STAGE" ] || rm -rf "$STAGE"
    exit $rc
}

# cluster_start [extra plugin words]: start the cluster; sets CL, SLURM_CONF, WORK (the user's submit
# directory), SHARE (the site path of share "myshare"). CLUSTER_OPTS: more localcluster start options
# (--gpus: two stand-in GPUs per node).
CLUSTER_OPTS=()
cluster_start() {
    # job_root lives in $CL, and the plugin accepts only a job_root that root alone can write all the way
    # down from / (SECURITY.md): not under /tmp.
    install -d -m 0755 /var/lib/batchai-test
    CL=$(mktemp -d /var/lib/batchai-test/XXXXXX)
    chmod 0755 "$CL"
    trap cluster_stop EXIT
    trap 'exit 130' INT TERM
    # job_temp under a sticky directory users can write, as /tmp/batchai is by default.
    install -d -m 1777 "$CL/scratch"
    lc_start "$CL" "${CLUSTER_OPTS[@]}" --plugin "$PLUGIN" \
        --plugin-args "shares_root=$CL/shares mount_root=$CL/mounts job_root=$CL/jobs job_temp=$CL/scratch/batchai image_root=$CL/images $*" >/dev/null
    # shellcheck disable=SC1091
    . "$CL/env"
    export SLURM_CONF
    WORK=$CL/work
    SHARE=$CL/shares/myshare
    install -d -m 0755 "$CL/shares" "$CL/mounts"
    install -d -o "$TEST_USER" -g "$TEST_USER" -m 0755 "$WORK" "$SHARE"
    TEST_UID=$(id -u "$TEST_USER")
}

# as_user CMD...: run a shell command line as the test user in $WORK. Its core size limit is raised to the
# hard limit, which Slurm passes on to the jobs it submits: a job's crash leaves a core for core_report.
as_user() {
    runuser -u "$TEST_USER" -- env -i -C "$WORK" PATH="$USER_PATH" HOME="$WORK" SLURM_CONF="$SLURM_CONF" \
        LANG=C.UTF-8 /bin/bash -c "ulimit -S -c \$(ulimit -H -c) 2>/dev/null; cd '$WORK' && $*"
}

# write_job FILE: job.json from stdin into $WORK, owned by the test user.
write_job() {
    cat >"$WORK/$1"
    chown "$TEST_USER:" "$WORK/$1"
}

# write_prep_job FILE COMMAND: a two-node job whose main step echoes MAIN-RAN on both nodes and whose
# jobPreparation runs COMMAND (as it stands in the JSON string: escape its quotes), the job of the tests that
# break the preparation. Its logs go to log_dir ID NAME, NAME being FILE without .json.
write_prep_job() {
    write_job "$1" <<JSON
{"properties": {"nodeCount": 2, "customMpiSettings": {"commandLine": "echo MAIN-RAN", "processCount": 2},
  $LOGS_JSON, $MOUNT_JSON,
  "jobPreparation": {"commandLine": "$2"}}}
JSON
}

# submit ARGS...: sbatch --parsable ARGS as the test user; prints the job id.
submit() {
    local out
    out=$(as_user "sbatch --parsable $(printf '%q ' "$@")" </dev/null 2>&1) || fail "sbatch $* failed: $out"
    echo "${out%%;*}"
}

job_field() { scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

# wait_job ID [SECONDS]: wait (at most 120 s) until the job has ended; prints its final state.
wait_job() {
    local i st limit=${2:-120}
    for ((i = 0; i < limit * 10; i++)); do
        st=$(job_field "$1" JobState)
        case $st in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
            echo "$st"; return 0 ;;
        esac
        sleep 0.1
    done
    # Show what the job wrote, to tell a hang from a crash.
    find "$SHARE" -path "*/$1/stdouterr/*" -type f 2>/dev/null | while read -r f; do
        echo "---- $f" >&2; tail -n 20 "$f" >&2
    done
    fail "job $1 did not end within $limit s (state $st)"
}

# The Batch AI log directory of job ID named NAME when stdOutErrPathPrefix is $AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs.
log_dir() { echo "$SHARE/logs/$2/$1/stdouterr"; }

# Both nodes idle: no job left them drained, down or completing (a few seconds allowed for the epilog).
assert_nodes_idle() {
    local s i
    for ((i = 0; i < 50; i++)); do
        s=$(sinfo -h -N -o '%N %T' | sort | tr '\n' ' ')
        [ "$s" = "n1 idle n2 idle " ] && break
        sleep 0.2
    done
    [ "$s" = "n1 idle n2 idle " ] || fail "nodes are not both idle: $s $(sinfo -h -R)"
    [ -z "$(sinfo -h -R)" ] || fail "a node has a drain reason: $(sinfo -h -R)"
}

# Root's victims for hostile tests: a root-owned directory and file that must never change. victim_state
# prints what must stay the same (names, owners, modes, sizes, content digest).
victim_make() {
    VICTIM=$CL/victim
    install -d -m 0755 "$VICTIM"
    echo "root's data" >"$VICTIM/file"
    chmod 0644 "$VICTIM/file"
    VICTIM_BEFORE=$(victim_state)
}
victim_state() { (cd "$VICTIM" && find . -printf '%p %u %m %s\n' | sort && md5sum file); }
assert_victim_unchanged() {
    [ "$(victim_state)" = "$VICTIM_BEFORE" ] || fail "root's victim changed: $(victim_state)"
}

assert_file() { [ -f "$1" ] || fail "missing file $1"; }
assert_grep() { grep -q -- "$1" "$2" || fail "$2 does not contain '$1': $(head -c 2000 "$2")"; }

# The mount every scenario uses: share "myshare" at $AZ_BATCHAI_JOB_MOUNT_ROOT/myshare.
MOUNT_JSON='"mountVolumes": {"azureFileShares": [{"azureFileUrl": "https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/myshare", "relativeMountPath": "myshare"}]}'
LOGS_JSON='"stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs"'

# stop_daemon NAME: stop a daemon of the cluster (slurmctld, slurmd-n1...) from its pid file.
stop_daemon() {
    local pid i
    pid=$(tr -dc '0-9' <"$CL/run/$1.pid")
    kill -TERM "$pid"
    for ((i = 0; i < 100; i++)); do [ -d "/proc/$pid" ] || return 0; sleep 0.1; done
    fail "$1 (pid $pid) did not stop"
}

# ctld_restart: slurmctld reads SlurmctldParameters, PrologFlags and the files configless ships when it
# starts: restart it after changing them (-i: its state stays).
ctld_restart() {
    local i
    stop_daemon slurmctld
    slurmctld -i || fail "slurmctld did not restart"
    for ((i = 0; i < 150; i++)); do scontrol ping >/dev/null 2>&1 && return 0; sleep 0.1; done
    fail "slurmctld does not answer after a restart"
}

# The bundled trainer's job (contrib/cifar/job.json), for the tests that run it: cifar.sh, requeue.sh,
# timelimit.sh. cifar_cluster_start [cluster_start words]: skips without the trainer, the data or Slurm's
# pmix; starts the cluster with cifar-train on the test user's PATH ($CL/bin), the CIFAR-10 subset as the
# share's cifar-10-batches-bin (linked, never copied) and the job file as $WORK/cifar.json. Sets DATA.
cifar_cluster_start() {
    local trainer=$BUILD/bin/cifar-train
    DATA=${CIFAR10_DIR:-$TOP/../shared/data/cifar-10-batches-bin-subset}
    [ -x "$trainer" ] || skip "$trainer is not built"
    [ -f "$DATA/test_batch.bin" ] || skip_for shared "no CIFAR-10 data at $DATA (set CIFAR10_DIR)"
    cluster_start "$@"
    srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix MPI plugin here"
    install -d -m 0755 "$CL/bin"
    install -m 0755 "$trainer" "$CL/bin/cifar-train"
    ln -s "$(cd "$DATA" && pwd -P)" "$SHARE/cifar-10-batches-bin"
    cp "$TOP/contrib/cifar/job.json" "$WORK/cifar.json"
    chown "$TEST_USER:" "$WORK/cifar.json"
}

# submit_cifar TRAINER-ARGS [SBATCH-OPTIONS...]: sbatch --batchai-job=cifar.json as the test user, with
# CIFAR_TRAIN_ARGS (the job file's extra arguments) set; prints the job id.
submit_cifar() {
    local args=$1 opts="" out
    shift
    [ $# -eq 0 ] || opts=$(printf '%q ' "$@") # printf of no argument would be one empty word
    out=$(as_user "PATH=$CL/bin:\$PATH OMPI_MCA_btl=self,tcp CIFAR_TRAIN_ARGS='$args' \
        sbatch --parsable $opts --batchai-job=cifar.json" </dev/null 2>&1) || fail "sbatch: $out"
    echo "${out%%;*}"
}

# The busybox image of the container tests (container.sh, gpus.sh), for Slurm's OCI --container (rootless
# runc): busybox_bundle_deps skips without what it needs; busybox_bundle DIR (after cluster_start) builds it
# from busybox-static and stages it with contrib/stage-oci-bundle; nothing is pulled. The bundle
# bind-mounts the test cluster's directory (shares, job directories, submit dir) at the same path, as a
# site's staged bundles bind its share roots and job_root, and has the mount point of the step's spool
# directory (Slurm 23.11+).
busybox_bundle_deps() {
    command -v runc >/dev/null || skip "runc is not installed"
    [ -x /bin/busybox ] || skip "busybox-static is not installed"
    [ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is needed to stage the bundle (contrib/stage-oci-bundle)"
    [ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] || skip "no user namespaces"
}
busybox_bundle() {
    local bundle=$1 t
    mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs"/{proc,dev,sys,tmp,etc,root,run,var}
    chmod 1777 "$bundle/rootfs/tmp"
    ln -s /run "$bundle/rootfs/var/run"
    cp /bin/busybox "$bundle/rootfs/bin/busybox"
    for t in sh cat echo date id mkdir ls env grep dd sed; do ln -s busybox "$bundle/rootfs/bin/$t"; done
    echo "busybox test image" >"$bundle/rootfs/etc/image-name"
    # As an admin stages one: config.json, the bind mount of the cluster directory and the mount points
    # rootless runc cannot create, /var/run/slurm included, where slurmstepd 23.11+ mounts the step's spool
    # directory (localcluster sets MountSpoolDir): the image's /var/run is a link to /run, which the staging
    # follows inside the rootfs.
    "$TOP/contrib/stage-oci-bundle" "$bundle" --bind "$CL" >/dev/null
}
