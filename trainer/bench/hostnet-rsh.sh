#!/bin/sh
# hostnet-rsh.sh HOST CMD...: Open MPI's rsh agent (--mca plm_rsh_agent) for hosts of a hostnet set
# (contrib/localcluster/hostnet; HOSTNET_SET names the set): runs CMD, a shell command line as ssh would
# get it, on HOST. mpirun itself runs in the set's ctl network namespace but the machine's mount namespace
# (nsenter --net=/run/netns/SET-ctl): ctl's own mount namespace does not see the other hosts' namespace files.
set -eu
host=$1
shift
here=$(cd "$(dirname "$0")" && pwd -P)
exec "$here/../../contrib/localcluster/hostnet" exec "${HOSTNET_SET:?HOSTNET_SET names the hostnet set}" "$host" -- \
    sh -c "$*"
