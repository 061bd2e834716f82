#!/usr/bin/python3
"""Stand-in for a toolkit's launcher (run as `cntk`, `caffe`) or script (run as standin.py KIND ...): records
how it was started, where, and with which Batch AI variables, as $REC_DIR/<kind>-<step>-<task>.json for
check.py. It does no work of the toolkit's."""
import json
import os
import sys

name = os.path.basename(sys.argv[0])
kind, args = (sys.argv[1], sys.argv[2:]) if name.endswith(".py") else (name, sys.argv[1:])
env = os.environ
rec = {"kind": kind, "args": args, "node": env.get("SLURMD_NODENAME"), "index": env.get("AZ_BATCHAI_TASK_INDEX"),
       "procid": env.get("SLURM_PROCID"), "ntasks": env.get("SLURM_NTASKS"), "step": env.get("SLURM_STEP_ID"),
       "ps_hosts": env.get("AZ_BATCHAI_PS_HOSTS"), "worker_hosts": env.get("AZ_BATCHAI_WORKER_HOSTS"),
       "pmix_rank": env.get("PMIX_RANK"), "uid": os.getuid()}
with open(os.path.join(env["REC_DIR"], "%s-%s-%s.json" % (kind, rec["step"], rec["procid"])), "w") as f:
    json.dump(rec, f)
