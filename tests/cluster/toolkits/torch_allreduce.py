#!/usr/bin/python3
"""torch.distributed across the job's tasks, started as the Batch AI PyTorch recipes start their scripts
(--dist-url $AZ_BATCHAI_PYTORCH_INIT_METHOD --rank $AZ_BATCHAI_TASK_INDEX), or, without --dist-url, as an
Azure ML command job's processes (env://: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK from the environment):
one all_reduce, one line each."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--dist-url")
p.add_argument("--rank", type=int)
p.add_argument("--world-size", type=int)
p.add_argument("--backend", default=os.environ.get("AZ_BATCHAI_PYTORCH_BACKEND", "gloo"))
a = p.parse_args()
timeout = datetime.timedelta(seconds=60)
if a.backend == "mpi":
    dist.init_process_group("mpi", timeout=timeout)
elif a.dist_url is None:
    dist.init_process_group(a.backend, init_method="env://", timeout=timeout)
else:
    dist.init_process_group(a.backend, init_method=a.dist_url, rank=a.rank, world_size=a.world_size, timeout=timeout)
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("rank %d of %d backend %s init %s sum %s on %s local_rank %s node_rank %s" % (dist.get_rank(),
      dist.get_world_size(), a.backend, a.dist_url or "env://" + os.environ.get("MASTER_ADDR", "?"), t.item(),
      os.environ.get("SLURMD_NODENAME"), os.environ.get("LOCAL_RANK"), os.environ.get("NODE_RANK")), flush=True)
