#!/usr/bin/python3
"""Stand-in for a toolkit's launcher (run as `cntk`, `caffe`) or script (run as standin.py KIND ...): records
how it was started, where, and with which Batch AI variables, as $REC_DIR/<kind>-<step>-<task>.json for
check.py. It does no work of the toolkit's."""
import json
import os
import sys
import time

name = os.path.basename(sys.argv[0])
kind, args = (sys.argv[1], sys.argv[2:]) if name.endswith(".py") else (name, sys.argv[1:])
env = os.environ
rec = {"kind": kind, "args": args, "node": env.get("SLURMD_NODENAME"), "index": env.get("AZ_BATCHAI_TASK_INDEX"),
       "procid": env.get("SLURM_PROCID"), "ntasks": env.get("SLURM_NTASKS"), "step": env.get("SLURM_STEP_ID"),
       "ps_hosts": env.get("AZ_BATCHAI_PS_HOSTS"), "worker_hosts": env.get("AZ_BATCHAI_WORKER_HOSTS"),
       "pmix_rank": env.get("PMIX_RANK"), "uid": os.getuid()}
with open(os.path.join(env["REC_DIR"], "%s-%s-%s.json" % (kind, rec["step"], rec["procid"])), "w") as f:
    json.dump(rec, f)

# A TensorFlow worker cannot finish before its parameter server is up (it connects to it), and the job
# cancels the parameter servers when the workers are done: without this wait, a loaded machine could cancel
# the parameter server's stand-in before it had written its record.
def ps_recorded():
    for n in os.listdir(env["REC_DIR"]):
        try:
            with open(os.path.join(env["REC_DIR"], n)) as f:
                if n.startswith(kind + "-") and "--job_name=ps" in json.load(f)["args"]:
                    return True
        except ValueError:  # a record still being written
            pass
    return False


if "--job_name=worker" in args:
    for _ in range(600):  # 60 s at most: the check then reports the missing record
        if ps_recorded():
            break
        time.sleep(0.1)

# A parameter server serves until the job stops it, as TensorFlow's server.join() does (120 s at most here).
if "--job_name=ps" in args:
    time.sleep(120)
