#!/usr/bin/env bash
# make bench-start: spank_plugin/bench/start-time.sh at each node count of HOSTS_COUNTS (default 2 8 32),
# every node a separate network host; then the table: medians of RUNS (default 5) alternating jobs per N,
# the plugin's added start time and its growth per node.
set -eu -o pipefail
cd "$(dirname "$0")/../.."
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for n in ${HOSTS_COUNTS:-2 8 32}; do
    rc=0
    BATCHAI_HOSTS=1 BATCHAI_HOSTS_NODES=$n spank_plugin/bench/start-time.sh | tee -a "$out" || rc=$?
    [ $rc = 0 ] || { [ $rc = 77 ] && echo "bench-start: skipped (above)" && exit 0; } || { echo "bench-start: N=$n failed"; exit 1; }
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
grep '^start ' "$out" | /usr/bin/python3 -c '
import sys
rows = [tuple(map(int, l.split()[1:])) for l in sys.stdin]
print("%6s %12s %12s %12s %14s" % ("nodes", "batchai ms", "plain ms", "added ms", "added/node ms"))
for n, a, b in sorted(rows):
    print("%6d %12d %12d %12d %14.1f" % (n, a, b, a - b, (a - b) / n))
print("submission to the last task of the main step started, medians; added = batchai - plain")'
