#!/usr/bin/env bash
# localcluster --hosts: three nodes that are separate network hosts. Each node's jobs see its own host
# name, address, /tmp and /dev/shm; the nodes reach each other and ctl, and nothing has a route out; the
# machine's namespace has no address of the set; libcollective's ranks on two nodes count as two hosts
# (MPI, not shared memory); stop leaves no namespace, state or mount of the set, and a start removes what
# a killed cluster left.
# The test makes its own sets from the machine's namespaces, so it never runs inside one (BATCHAI_HOSTS).
BATCHAI_HOSTS=0
. "$(dirname "$0")/lib.sh"
for p in ip nsenter unshare; do command -v "$p" >/dev/null || skip "$p is not installed"; done
BENCH=$BUILD/bin/coll-bench
[ -x "$BENCH" ] || skip "$BENCH is not built (it needs MPI: libopenmpi-dev)"
CLUSTER_OPTS=(--hosts 3)
cluster_start
read -r SET _ <"$CL/hostnet"
PORT=$(sed -n 's/^SlurmctldPort=//p' "$CL/slurm.conf")

# on_ctl_user CMD: a shell command line as the test user on ctl, in $WORK.
on_ctl_user() {
    "$LC" exec "$CL" -- runuser -u "$TEST_USER" -- env -i -C "$WORK" PATH="$USER_PATH" HOME="$WORK" \
        SLURM_CONF="$SLURM_CONF" LANG=C.UTF-8 /bin/bash -c "cd '$WORK' && $*"
}
"$LC" exec "$CL" -- srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix MPI plugin here"

# The machine's own namespace: no address of the set and no route of its own to it (only the default
# route, which leads off this machine: the test never sends anything there). A listener on ctl records each
# connection: n1's, and only n1's, arrives.
! ip -4 -o addr | grep -q ' 198\.18\.' || fail "the machine's namespace has a 198.18 address: $(ip -4 -o addr)"
own=$(ip -4 route show to match 198.18.0.1 | grep -v '^default' || true)
[ -z "$own" ] || fail "the machine's namespace has a route to the set: $own"
"$HOSTNET" exec "$SET" ctl timeout 60 /usr/bin/python3 -c 'import socket, sys
s = socket.socket(); s.bind(("198.18.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True)
while True:
    c, peer = s.accept(); open(sys.argv[1], "a").write(peer[0] + "\n"); c.close()' "$CL/accepted" >"$CL/listen.port" &
listener=$!
for i in $(seq 50); do [ -s "$CL/listen.port" ] && break; sleep 0.1; done
lport=$(cat "$CL/listen.port")
[ -n "$lport" ] || fail "no listener on ctl"
"$HOSTNET" exec "$SET" n1 timeout 5 bash -c "echo hello >/dev/tcp/198.18.0.1/$lport" || fail "n1 cannot connect to ctl"
sleep 0.5
[ "$(cat "$CL/accepted" 2>/dev/null)" = 198.18.0.11 ] ||
    fail "ctl's listener accepted: $(cat "$CL/accepted" 2>/dev/null) (want n1's 198.18.0.11 alone)"
kill -TERM "$listener" 2>/dev/null || true
wait "$listener" 2>/dev/null || true

# Who each node is, and its routes: its own name and address, one route (the set's network).
out=$(on_ctl_user "srun -N3 -l bash -c 'echo \$SLURMD_NODENAME \$(hostname) \$(ip -4 -o addr show eth0 | awk \"{print \\\$4}\") \$(ip route | wc -l) \$(ip route | cut -d\" \" -f1-3)'" 2>&1) ||
    fail "srun -N3 failed: $out"
for i in 1 2 3; do
    grep -q "^[0-9]*: n$i n$i 198\.18\.0\.1$i/16 1 198\.18\.0\.0/16 dev eth0$" <<<"$out" ||
        fail "node n$i: not its own name, address and one route to 198.18.0.0/16: $out"
done

# The nodes reach each other's slurmd and ctl's slurmctld; no address outside the set has a route, the
# machine's own included.
outside=(192.0.2.1 10.0.0.1 8.8.8.8)
mine=$(ip -4 -o route get 192.0.2.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
[ -z "$mine" ] || outside+=("$mine")
reach="for a in 198.18.0.1:$PORT 198.18.0.11:$((PORT + 1)) 198.18.0.12:$((PORT + 1)) 198.18.0.13:$((PORT + 1)); do
    timeout 5 bash -c \"</dev/tcp/\${a%:*}/\${a#*:}\" && echo reach \$a || echo noreach \$a; done
    for a in ${outside[*]}; do ip route get \$a >/dev/null 2>&1 && echo route \$a || echo noroute \$a; done"
out=$(on_ctl_user "srun -N3 -l bash -c '$reach'" 2>&1) || fail "srun -N3 (reach) failed: $out"
[ "$(grep -c ' reach 198\.18\.' <<<"$out")" = 12 ] || fail "not every node reaches ctl and every node: $out"
[ "$(grep -c ' noroute ' <<<"$out")" = $((3 * ${#outside[@]})) ] || fail "a node has a route out: $out"

# /tmp and /dev/shm are each node's own: what a job writes on n1 is absent on n2, n3 and ctl.
mark=hosts-mark-$SET
out=$(on_ctl_user "srun -w n1 -N1 bash -c 'echo x >/tmp/$mark && echo x >/dev/shm/$mark' &&
    srun -N3 -l bash -c 'for f in /tmp/$mark /dev/shm/$mark; do [ -e \$f ] && echo has \$f || echo lacks \$f; done'" 2>&1) ||
    fail "srun (marks) failed: $out"
for f in /tmp /dev/shm; do
    grep -q "^0: has $f/$mark$" <<<"$out" || fail "n1 lost its $f file: $out"
    grep -q "^1: lacks $f/$mark$" <<<"$out" || fail "n2 sees n1's $f: $out"
    grep -q "^2: lacks $f/$mark$" <<<"$out" || fail "n3 sees n1's $f: $out"
    [ ! -e "$f/$mark" ] || fail "the machine (ctl) sees n1's $f/$mark"
done

# libcollective's host key differs between the nodes: its ranks on n1 and n2 reduce through MPI.
install -d -m 0755 "$CL/bin"
install -m 0755 "$BENCH" "$CL/bin/coll-bench"
out=$(on_ctl_user "OMPI_MCA_btl=self,tcp srun -N2 --mpi=pmix $CL/bin/coll-bench --mem shared -b 1K -e 1K -n 1 -w 0" 2>&1) ||
    fail "coll-bench over n1 and n2 failed: $out"
grep -q 'nranks 2 .*memory: shared (coll_host_alloc: private fallback) backend: MPI ' <<<"$out" ||
    fail "libcollective's ranks on two hosts did not take the MPI path: $out"
grep -q ' on *n1 ' <<<"$out" || fail "rank 0 is not on n1: $out"

# stop removes the set: its namespaces, state, mounts and anchor.
anchor=$(cat "/run/batchai-hosts/$SET/anchor.pid")
"$LC" stop "$CL" >/dev/null || fail "localcluster stop failed"
left() {
    ip netns list | grep "^$1-" || true
    [ ! -e "/run/batchai-hosts/$1" ] || echo "/run/batchai-hosts/$1"
    grep "/run/batchai-hosts/$1/" /proc/mounts || true
}
[ -z "$(left "$SET")" ] || fail "stop left parts of set $SET: $(left "$SET")"
# Killed, it may stay a zombie a moment until its new parent reaps it.
alive() { [ -d "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
! alive "$anchor" || fail "stop left set $SET's anchor (pid $anchor)"
[ ! -e "$CL/hostnet" ] || fail "stop left $CL/hostnet"

# A cluster whose processes were all killed (SIGKILL) leaves its set. The next start of its directory
# removes it; a set nothing runs in whose directory is gone goes at any start (hostnet gc, a minute
# after it was made: its age is set back here).
kill_cluster() {
    local f pid
    for f in "$1"/run/*.pid; do pid=$(tr -dc '0-9' <"$f"); kill -KILL "$pid" 2>/dev/null || true; done
}
OTHER=$CL/other
lc_start "$OTHER" --hosts 2 >/dev/null || fail "start of a second --hosts cluster failed"
read -r other_set _ <"$OTHER/hostnet"
kill_cluster "$OTHER"
rm -rf "$OTHER"
touch -d '2 minutes ago' "/run/batchai-hosts/$other_set/hosts.list"
lc_start "$CL" --hosts 2 >/dev/null || fail "restart failed"
kill_cluster "$CL"
[ -n "$(left "$SET")" ] || fail "the killed cluster left nothing to remove (the check would not see it)"
lc_start "$CL" --hosts 2 --plugin "$PLUGIN" >/dev/null || fail "start after a killed cluster failed"
[ -z "$(left "$other_set")" ] || fail "a start left a dead set: $(left "$other_set")"
[ "$(ip netns list | grep -c "^$SET-")" = 4 ] || fail "set $SET is not exactly ctl, n1, n2 and its bridge: $(ip netns list)"
out=$(on_ctl_user "srun -N2 hostname" 2>&1) || fail "srun on the restarted cluster failed: $out"
[ "$(sort <<<"$out" | tr '\n' ' ')" = "n1 n2 " ] || fail "restarted cluster's nodes answered: $out"
pass "3 nodes as hosts (own names, addresses, /tmp, /dev/shm, no route out), libcollective over MPI, nothing left at stop or after a kill"
