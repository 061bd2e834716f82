#!/usr/bin/python3
"""An MPI program for the MPI toolkits (mpi_allreduce.py KIND): allreduce across the ranks, and a record of
rank, size, sum, node and the job's MPI host file for check.py."""
import json
import os
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = comm.allreduce(rank + 1)
env = os.environ
path = env.get("AZ_BATCHAI_MPI_HOST_FILE", "")
hosts = open(path).read().split() if os.path.exists(path) else None
rec = {"kind": sys.argv[1], "rank": rank, "size": size, "sum": total, "node": env.get("SLURMD_NODENAME"),
       "index": env.get("AZ_BATCHAI_TASK_INDEX"), "hosts": hosts, "processor": MPI.Get_processor_name()}
with open(os.path.join(env["REC_DIR"], "%s-%d.json" % (sys.argv[1], rank)), "w") as f:
    json.dump(rec, f)
