#!/usr/bin/python3
"""coll-bench's peer on GPUs: torch.distributed's all_reduce over NCCL (the NCCL that PyTorch itself brings),
with coll-bench's sweep and timing loop, so that the two tables line up row by row.

  torch_allreduce.py [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [--rounds R] [--np N]

Sizes as coll-bench: MIN..MAX bytes of float32 (suffixes K, M, G), multiplied by FACTOR (default 8 B .. 64 MiB,
doubling). Per row, as coll-bench's time_coll: WARMUP calls, a barrier, ITERS calls each waited for
(coll_allreduce returns when the reduction is done, so each call here is followed by
torch.cuda.synchronize()), mean seconds per call on the slowest rank, best of R rounds (default 3). One
process per GPU, N of them (default: every GPU); one validation call per row checks every element. Only
in place: torch.distributed has no out-of-place all_reduce. Columns: size (B), count, type, redop, time
(us), algbw and busbw (GB/s, busbw = algbw * 2(n-1)/n as nccl-tests), #wrong."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * mult[text[-1].upper()] if text[-1].upper() in mult else int(text)


def options(argv):
    o = {"-b": "8", "-e": "64M", "-f": "2", "-n": "100", "-w": "10", "--rounds": "3", "--np": "0"}
    i = 0
    while i < len(argv):
        if argv[i] not in o or i + 1 >= len(argv):
            sys.exit("torch_allreduce.py: unknown or incomplete option %r\n%s" % (argv[i], __doc__))
        o[argv[i]] = argv[i + 1]
        i += 2
    return o


def run(rank, world, o, port):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    lo, hi, factor = parse_size(o["-b"]), parse_size(o["-e"]), float(o["-f"])
    iters, warmup, rounds = int(o["-n"]), int(o["-w"]), int(o["--rounds"])
    if rank == 0:
        print("# torch.distributed all_reduce (torch %s, NCCL %s): nranks %d minBytes %d maxBytes %d step: %g(factor) "
              "warmup iters: %d iters: %d rounds: %d, in place, float32 sum" %
              (torch.__version__, ".".join(map(str, torch.cuda.nccl.version())), world, lo, hi, factor, warmup, iters,
               rounds))
        print("# %10s  %12s  %8s  %6s  %7s  %6s  %6s  %6s" % ("size", "count", "type", "redop", "time", "algbw",
                                                               "busbw", "#wrong"))
        print("# %10s  %12s  %8s  %6s  %7s  %6s  %6s  %6s" % ("(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)",
                                                               ""))
    size = lo
    while size <= hi:
        count = max(size // 4, 1)
        x = torch.empty(count, dtype=torch.float32, device="cuda")
        # Validation as coll-bench's fill/wrong: element i of rank r is 2(r+1)(i%13+1); the sum is
        # world(world+1)(i%13+1).
        pattern = (torch.arange(count, device="cuda") % 13 + 1).float()
        x.copy_(2 * (rank + 1) * pattern)
        dist.all_reduce(x)
        torch.cuda.synchronize()
        wrong = torch.tensor([int((x != world * (world + 1) * pattern).sum())], device="cuda")
        dist.all_reduce(wrong)
        best = None
        for _ in range(rounds):
            for _ in range(warmup):
                dist.all_reduce(x)
                torch.cuda.synchronize()
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(x)
                torch.cuda.synchronize()
            sec = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64, device="cuda")
            dist.all_reduce(sec, op=dist.ReduceOp.MAX)
            best = sec.item() if best is None else min(best, sec.item())
        if rank == 0:
            alg = count * 4 / best / 1e9
            bus = alg * (2.0 * (world - 1) / world if world > 1 else 1.0)
            print("%12d  %12d  %8s  %6s  %7.1f  %6.2f  %6.2f  %6d" % (count * 4, count, "float", "sum", best * 1e6, alg,
                                                                       bus, int(wrong.item())))
            sys.stdout.flush()
        size = int(size * factor) if int(size * factor) > size else size + 1
    dist.destroy_process_group()


def main():
    o = options(sys.argv[1:])
    if not torch.cuda.is_available():
        sys.exit("torch_allreduce.py: torch.cuda.is_available() is false: no GPU for NCCL")
    world = int(o["--np"]) or torch.cuda.device_count()
    port = 29500 + os.getpid() % 2000
    if world == 1:
        run(0, 1, o, port)
    else:
        mp.spawn(run, args=(world, o, port), nprocs=world)


if __name__ == "__main__":
    main()
