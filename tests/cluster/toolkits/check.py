#!/usr/bin/python3
"""check.py REC_DIR ADDR1,ADDR2 KIND MODE [ARGS...]: the records a toolkit job left, against Batch AI's
semantics; ADDRi is node ni's address (NodeAddr).
  mpi            2 ranks, world 2, allreduce sum 3, rank r on node n<r+1>, AZ_BATCHAI_TASK_INDEX = rank, the
                 host file (read where rank 0 runs) = each node's address
  tensorflow     1 parameter server and 2 workers: AZ_BATCHAI_PS_HOSTS = ADDR1:2222, AZ_BATCHAI_WORKER_HOSTS =
                 ADDR1:2223,ADDR2:2223, each role's task i on node i mod 2 with --task_index=i, no master
  single ARGS    one process, task 0, started with exactly ARGS
  each ARGS      2 processes, task i on node n<i+1>, each started with exactly ARGS
Prints what differs and exits 1."""
import glob
import json
import os
import sys

rec_dir, addrs, kind, mode, want_args = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4], sys.argv[5:]
recs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(rec_dir, kind + "-*.json")))]
recs = [r for r in recs if r["kind"] == kind]
faults = []


def want(cond, what):
    if not cond:
        faults.append(what)


def on_nodes(group, key):
    for r in group:
        i = int(r[key])
        want(r["node"] == "n%d" % (i % 2 + 1), "%s %s runs on %s, not n%d" % (kind, r[key], r["node"], i % 2 + 1))
        want(str(r.get("index")) == str(i), "%s: AZ_BATCHAI_TASK_INDEX %s for task %d" % (kind, r.get("index"), i))


if mode == "mpi":
    want(len(recs) == 2, "%d ranks recorded, want 2" % len(recs))
    want(sorted(r["rank"] for r in recs) == [0, 1], "ranks %s" % [r["rank"] for r in recs])
    for r in recs:
        want(r["size"] == 2 and r["sum"] == 3, "rank %d: size %d sum %d" % (r["rank"], r["size"], r["sum"]))
        if r["rank"] == 0:
            want(r["hosts"] == addrs, "host file %s, want %s" % (r["hosts"], addrs))
    on_nodes(recs, "rank")
elif mode == "tensorflow":
    role = lambda r: next((a.split("=", 1)[1] for a in r["args"] if a.startswith("--job_name=")), None)
    ps = [r for r in recs if role(r) == "ps"]
    workers = [r for r in recs if role(r) == "worker"]
    want(len(ps) == 1 and len(workers) == 2 and len(recs) == 3, "roles %s" % [role(r) for r in recs])
    for r in recs:
        want(r["ps_hosts"] == addrs[0] + ":2222", "AZ_BATCHAI_PS_HOSTS %s" % r["ps_hosts"])
        want(r["worker_hosts"] == ",".join(a + ":2223" for a in addrs), "AZ_BATCHAI_WORKER_HOSTS %s" % r["worker_hosts"])
        want("--task_index=%s" % r["index"] in r["args"], "args %s for task index %s" % (r["args"], r["index"]))
        want("--ps_hosts=%s" % r["ps_hosts"] in r["args"], "args %s lack the expanded ps hosts" % r["args"])
    on_nodes(ps, "procid")
    on_nodes(workers, "procid")
elif mode in ("single", "each"):
    n = 1 if mode == "single" else 2
    want(len(recs) == n, "%d processes recorded, want %d" % (len(recs), n))
    for r in recs:
        want(r["args"] == want_args, "args %s, want %s" % (r["args"], want_args))
    if mode == "each":
        on_nodes(recs, "procid")
    else:
        want(all(r["index"] == "0" for r in recs), "task index %s" % [r["index"] for r in recs])
else:
    faults.append("unknown mode " + mode)
for f in faults:
    print("check %s: %s" % (kind, f))
sys.exit(1 if faults else 0)
