#!/usr/bin/python3
"""torch.distributed across the job's tasks, started as the Batch AI PyTorch recipes start their scripts
(--dist-url $AZ_BATCHAI_PYTORCH_INIT_METHOD --rank $AZ_BATCHAI_TASK_INDEX): one all_reduce, one line each."""
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
else:
    dist.init_process_group(a.backend, init_method=a.dist_url, rank=a.rank, world_size=a.world_size, timeout=timeout)
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("rank %d of %d backend %s init %s sum %s on %s" % (dist.get_rank(), dist.get_world_size(), a.backend,
      a.dist_url, t.item(), os.environ.get("SLURMD_NODENAME")), flush=True)
