#!/usr/bin/python3
"""The PyTorch DDP peer of `make bench-scaling`: torch_peer.py's model, recipe and optimizer (the tutorial's,
as cifar-train runs it), wrapped in DistributedDataParallel over gloo when there is more than one rank.

  torch_ddp.py DATA_DIR THREADS EPOCHS

Rank and size come from the launcher, as cifar-train's do: mpirun (OMPI_COMM_WORLD_RANK/SIZE) or srun
(SLURM_PROCID/SLURM_NTASKS); none: one process, no DDP (the strongest single process, as cifar-train skips
its allreduce at size 1). MASTER_ADDR and MASTER_PORT must be set for more than one rank.

Timed as cifar-train times an epoch: each rank walks a shuffled pass over the whole training set (as
cifar-train without --shard) in batches of 32, the last one partial; "seconds" is the epoch's wall time
(order, indexing and augmentation on the calling thread, then the step), "step_seconds" the steps alone
(forward, loss, backward with DDP's bucketed allreduces overlapped, the RMSprop update). No validation.
Rank 0 prints one JSON line per epoch, with the same keys as cifar-train's --log-json epoch lines."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peer import DEVICE, Trainer, augment, keras_loss, load  # noqa: E402


def world():
    for rank, size in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")):
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    return 0, 1


def main():
    d, threads, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rank, size = world()
    # As torch_peer.py bench: exactly `threads` compute threads, no inter-op pool, denormals flushed.
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    torch.set_flush_denormal(True)
    torch.manual_seed(int(os.environ.get("SEED", "1")) + rank)
    xtr, ytr = load(d, ["data_batch_%d.bin" % i for i in range(1, 6)])
    t = Trainer(lr=1e-4 * size, foreach=True)
    if size > 1:
        dist.init_process_group("gloo", rank=rank, world_size=size)
        t.m = torch.nn.parallel.DistributedDataParallel(t.m)
    if rank == 0 and os.environ.get("PEER_CONFIG") == "1":
        print("# torch %s, %d rank(s), %s, %d thread(s) per rank, interop 1, DDP bucket_cap_mb 25 (default)"
              % (torch.__version__, size, "gloo" if size > 1 else "no DDP (one process)", threads))
        for line in torch.__config__.parallel_info().splitlines():
            print("# " + line)
    batch = 32
    for epoch in range(epochs):
        order = torch.randperm(len(ytr))
        start, step_time, seen = time.perf_counter(), 0.0, 0
        t.m.train()
        for i in range(0, len(ytr), batch):
            idx = order[i:i + batch]
            xb, yb = augment(xtr[idx]).to(DEVICE), ytr[idx].to(DEVICE)
            s0 = time.perf_counter()
            loss = keras_loss(t.m(xb), yb)
            t.opt.zero_grad(set_to_none=True)
            loss.backward()
            t.opt.step()
            t.sched.step()
            step_time += time.perf_counter() - s0
            seen += len(yb)
        seconds = time.perf_counter() - start
        if rank == 0:
            print(json.dumps({"type": "epoch", "epoch": epoch + 1, "images": seen, "seconds": round(seconds, 4),
                              "step_seconds": round(step_time, 4), "images_per_sec": round(seen * size / seconds, 1)}),
                  flush=True)
    if size > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
