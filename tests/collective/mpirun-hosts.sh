#!/usr/bin/env bash
# mpirun-hosts.sh: mpirun across hosts of one machine that are separate network hosts
# (contrib/localcluster/hostnet: own network, UTS and mount namespaces, so libcollective's host keys
# differ and its path across hosts runs over TCP).
#
#   mpirun-hosts.sh up SET N [hostnet up options]      hosts ctl, n1 .. nN (hostnet up SET N ...)
#   mpirun-hosts.sh run SET K [MPIRUN ARGS] PROGRAM..   mpirun on ctl, K ranks on each of n1 .. nN
#   mpirun-hosts.sh down SET                           hostnet down SET
#   mpirun-hosts.sh rsh SET HOST CMD                   mpirun's remote shell (plm_rsh_agent), not for users
#
# `run` starts mpirun inside ctl with this script as its remote shell, so each orted starts on its host
# through `hostnet exec`. The environment travels as with ssh under a shared home: the orteds inherit
# mpirun's, so COLL_* settings given to `run` reach every rank (-x is not needed). Ranks are placed by
# slot: n1 holds ranks 0 .. K-1, n2 the next K, and so on; they start in the current directory. The nodes have a /tmp and /dev/shm of their
# own: files the ranks share belong under /work or /var/lib. Root only (namespaces); as root mpirun gets
# --allow-run-as-root. Ranks on one node talk through Open MPI's shared-memory transport (vader), across
# nodes through TCP on eth0 (198.18.0.0/16), so OMPI_MCA_btl is set to self,vader,tcp unless given.
# A run ends within seconds when an orted dies (each stays attached to its remote shell, whose end mpirun
# sees) and after MPIRUN_HOSTS_TIMEOUT seconds in any case (default 300; 0: unbounded), saying why.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
HOSTNET=${HOSTNET:-$(cd "$here/../../contrib/localcluster" && pwd -P)/hostnet}

usage() { sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 set=$2
shift 2
case $cmd in
up) exec "$HOSTNET" up "$set" "$@" ;;
down) exec "$HOSTNET" down "$set" ;;
rsh)
    host=${1:?rsh: no host}
    shift
    # Open MPI hands the remote command as words of one shell line, as ssh would.
    # This runs inside ctl, whose mount namespace does not see the other hosts' namespace files (hostnet
    # keeps its state directory private): hostnet exec runs from the mount namespace `run` started in,
    # which mpirun (this script's parent: no tree spawn) holds open as fd 9.
    exec nsenter --mount="/proc/$PPID/fd/9" -- "$HOSTNET" exec "$set" "$host" sh -c "$*"
    ;;
run)
    per=${1:?run: ranks per host}
    shift
    [[ $per =~ ^[1-9][0-9]*$ ]] || { echo "mpirun-hosts.sh: ranks per host '$per': a positive number" >&2; exit 2; }
    nodes=$(grep -c '^n' "/run/batchai-hosts/$set/hosts.list") ||
        { echo "mpirun-hosts.sh: no host set $set (mpirun-hosts.sh up $set N)" >&2; exit 2; }
    hostlist=""
    for ((i = 1; i <= nodes; i++)); do hostlist+="${hostlist:+,}n$i:$per"; done
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
    # Only eth0 crosses hosts (lo would be every host's own); the same for mpirun's own channel.
    export OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include:-eth0}
    export OMPI_MCA_oob_tcp_if_include=${OMPI_MCA_oob_tcp_if_include:-eth0}
    # Detached (--daemonize, Open MPI's default), an orted that died after its remote shell ended was never
    # noticed: an orted that could not find this script (a checkout in sight of ctl, not of the node) left
    # mpirun waiting for its call-back for good.
    export OMPI_MCA_orte_leave_session_attached=1
    timeout=${MPIRUN_HOSTS_TIMEOUT:-300}
    [[ $timeout =~ ^[0-9]+$ ]] || { echo "mpirun-hosts.sh: MPIRUN_HOSTS_TIMEOUT '$timeout': seconds" >&2; exit 2; }
    bound=()
    [ "$timeout" = 0 ] || bound=(--timeout "$timeout")
    exec 9</proc/self/ns/mnt # for rsh, above
    root=()
    [ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
    exec "$HOSTNET" exec "$set" ctl mpirun "${root[@]}" --mca plm_rsh_agent "$here/mpirun-hosts.sh rsh $set" \
        --mca plm_rsh_no_tree_spawn 1 "${bound[@]}" \
        --wdir "$PWD" --host "$hostlist" -np $((nodes * per)) "$@"
    ;;
*) usage ;;
esac
