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
Rank 0 prints one JSON line per epoch, with the same keys as cifar-train's --log-json epoch lines. With
more than one rank, "wait_seconds" is what cifar-train's is: the time backward spent after its compute was
done, waiting for the gradient allreduces. DDP's comm hook (the default allreduce, timed) notes when each
bucket is handed to gloo; the last bucket is handed over when backward has computed the last gradient,
and loss.backward() returns once every bucket is reduced.

COMPRESS=fp16: DDP's fp16_compress_hook (gradients cross as float16), the peer of cifar-train --compress fp16.
ALLREDUCE_ONLY=1: no training; rank 0 prints {"type": "allreduce", "ms": ...}, gloo's allreduce of one
float tensor of the model's size alone on the link (3 rounds of 5 warm-up and 20 timed, the best round's
mean, as coll-bench reports libcollective's), which make bench-scaling sets beside the wait."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peer import DEVICE, Trainer, augment, keras_loss, load  # noqa: E402


def world():
    for rank, size in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")):
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    return 0, 1


def timed_allreduce(state, bucket):
    """DDP's default hook (COMPRESS=fp16: its fp16_compress_hook), noting when backward hands each bucket
    over."""
    state["handed"] = time.perf_counter()
    if os.environ.get("COMPRESS") == "fp16":
        return default_hooks.fp16_compress_hook(None, bucket)
    return default_hooks.allreduce_hook(None, bucket)


def allreduce_alone(rank, nparams):
    x, best = torch.ones(nparams, dtype=torch.half if os.environ.get("COMPRESS") == "fp16" else torch.float), float("inf")
    for _ in range(3):
        for _ in range(5):
            dist.all_reduce(x)
        t = time.perf_counter()
        for _ in range(20):
            dist.all_reduce(x)
        best = min(best, (time.perf_counter() - t) / 20)
    if rank == 0:
        print(json.dumps({"type": "allreduce", "elements": nparams, "ms": round(best * 1e3, 3)}), flush=True)


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
    hook = {"handed": 0.0}
    if size > 1:
        dist.init_process_group("gloo", rank=rank, world_size=size)
        if os.environ.get("ALLREDUCE_ONLY") == "1":
            allreduce_alone(rank, sum(p.numel() for p in t.m.parameters()))
            dist.destroy_process_group()
            return
        t.m = torch.nn.parallel.DistributedDataParallel(t.m)
        t.m.register_comm_hook(hook, timed_allreduce)
    if rank == 0 and os.environ.get("PEER_CONFIG") == "1":
        print("# torch %s, %d rank(s), %s, %d thread(s) per rank, interop 1, DDP bucket_cap_mb 25 (default)"
              % (torch.__version__, size, "gloo" if size > 1 else "no DDP (one process)", threads))
        for line in torch.__config__.parallel_info().splitlines():
            print("# " + line)
    batch = 32
    for epoch in range(epochs):
        order = torch.randperm(len(ytr))
        start, step_time, wait, seen = time.perf_counter(), 0.0, 0.0, 0
        t.m.train()
        for i in range(0, len(ytr), batch):
            idx = order[i:i + batch]
            xb, yb = augment(xtr[idx]).to(DEVICE), ytr[idx].to(DEVICE)
            s0 = time.perf_counter()
            loss = keras_loss(t.m(xb), yb)
            t.opt.zero_grad(set_to_none=True)
            loss.backward()
            if size > 1:
                wait += time.perf_counter() - hook["handed"]
            t.opt.step()
            t.sched.step()
            step_time += time.perf_counter() - s0
            seen += len(yb)
        seconds = time.perf_counter() - start
        if rank == 0:
            line = {"type": "epoch", "epoch": epoch + 1, "images": seen, "steps": (len(ytr) + batch - 1) // batch,
                    "seconds": round(seconds, 4), "step_seconds": round(step_time, 4),
                    "images_per_sec": round(seen * size / seconds, 1)}
            if size > 1:
                line["wait_seconds"] = round(wait, 4)
            print(json.dumps(line), flush=True)
    if size > 1:
        # Every rank is done before any leaves; then out without tearing gloo down: across hosts, a rank
        # whose peer had already gone was seen spinning in the teardown for minutes (torch 1.13).
        dist.barrier()
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
