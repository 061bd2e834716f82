#!/usr/bin/python3
"""The PyTorch peer of cifar-train: the tutorial's model and recipe (trainer.md) in PyTorch (Debian's
python3-torch, oneDNN, channels_last), for side-by-side speed and accuracy.

  torch_peer.py bench DATA_DIR THREADS [BATCH] [SECONDS] [LAYER_SECONDS]
                                                           training img/s (order + augmentation + step on the
                                                           same thread) and inference img/s, then with
                                                           LAYER_SECONDS > 0 a second training loop timing each
                                                           part of a step (LayerTimer), then the peak RSS
  torch_peer.py train DATA_DIR EPOCHS [THREADS]            the recipe on DATA_DIR; prints val_acc per epoch
  torch_peer.py gpu DATA_DIR BATCH SECONDS fp32|tf32 train|step eager|compile|compile-default|compile-reduce-overhead
                                                           trainer/bench/gpu-vs-torch.sh's measurement, timed as
                                                           trainer-gpu-bench times ours (5 warm-up steps,
                                                           wall clock, device drained at the end); step: one
                                                           batch already on the GPU; compile: torch.compile
                                                           (mode reduce-overhead: CUDA graphs), as
                                                           compile-reduce-overhead; compile-default: its
                                                           default mode
(SEED=N in the environment picks the seed, default 1. DEVICE=cuda trains on the GPU: a CUDA build of torch,
not Debian's; augmentation stays on the CPU as in cifar-train, and TF32 is off as in cifar-train's cuBLAS
default, TORCH_TF32=1 turns it on, cudnn.benchmark picks the fastest convolution algorithms.)

Same as cifar-train: glorot_uniform kernels, zero biases, inputs /255, random shift up to 10% (bilinear,
border pixels repeated) + horizontal flip, dropout 0.25/0.25/0.5, softmax cross-entropy with Keras's
clipping to [1e-7, 1-1e-7], RMSprop rho 0.9 eps 1e-7 lr 1e-4 with Keras's decay lr/(1+1e-6*iterations),
batch 32, a shuffled pass over the training set per epoch, validation on the test set after each epoch."""
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def load(d, names):
    raw = np.concatenate([np.fromfile(os.path.join(d, n), dtype=np.uint8).reshape(-1, 3073) for n in names])
    x = raw[:, 1:].reshape(-1, 3, 32, 32)  # planar CHW, as the file stores it
    return torch.from_numpy(x.copy()), torch.from_numpy(raw[:, 0].astype(np.int64))


DEVICE = torch.device(os.environ.get("DEVICE", "cpu"))
if DEVICE.type == "cuda":
    tf32 = os.environ.get("TORCH_TF32") == "1"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True


def model():
    m = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(2304, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, 10))
    for layer in m:
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
    return m.to(DEVICE, memory_format=torch.channels_last)


def augment(xb, draws=None):
    """Keras ImageDataGenerator(width/height_shift_range=0.1, fill_mode='nearest', horizontal_flip=True).
    draws: (shift cols, shift rows, flip) tensors of given draws (torch_with_our_draws.py), else torch's."""
    n = xb.shape[0]
    x = xb.float().div_(255)
    shift = (torch.rand(n, 2) * 2 - 1) * 0.1 * 32 if draws is None else torch.stack(draws[:2], 1)  # px (cols, rows)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = 1
    theta[:, 1, 1] = 1
    theta[:, :, 2] = shift * 2 / 31  # align_corners=True: normalised units per pixel
    grid = F.affine_grid(theta, x.shape, align_corners=True)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=True)
    flip = torch.rand(n) < 0.5 if draws is None else draws[2]
    x[flip] = x[flip].flip(3)
    return x.contiguous(memory_format=torch.channels_last)


def keras_loss(logits, y):
    p = F.softmax(logits, dim=1).clamp(1e-7, 1 - 1e-7)
    return F.nll_loss(torch.log(p), y)


class Trainer:
    def __init__(self, lr=1e-4, foreach=None):
        self.m = model()
        # foreach: one fused update over all tensors (the bench's fast path; the same arithmetic).
        self.opt = torch.optim.RMSprop(self.m.parameters(), lr=lr, alpha=0.9, eps=1e-7, foreach=foreach)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda it: 1.0 / (1.0 + 1e-6 * it))

    def step(self, xb, yb, mark=None):
        """One training step; mark (LayerTimer.switch) is told where the loss, its backward and the update
        begin."""
        self.m.train()
        out = self.m(augment(xb).to(DEVICE, non_blocking=True))
        if mark:
            mark("loss")
        yb = yb.to(DEVICE, non_blocking=True)
        loss = keras_loss(out, yb)
        self.opt.zero_grad(set_to_none=True)
        if mark:
            mark("loss_bwd")
        loss.backward()
        if mark:
            mark("update")
        self.opt.step()
        self.sched.step()
        return loss.item() * len(yb), (out.argmax(1) == yb).sum().item()

    @torch.no_grad()
    def evaluate(self, x, y, batch=32):
        self.m.eval()
        loss, right = 0.0, 0
        for i in range(0, len(y), batch):
            xb = (x[i:i + batch].float() / 255).contiguous(memory_format=torch.channels_last).to(DEVICE)
            yb = y[i:i + batch].to(DEVICE)
            out = self.m(xb)
            loss += keras_loss(out, yb).item() * len(xb)
            right += (out.argmax(1) == yb).sum().item()
        return loss / len(y), right / len(y)


class LayerTimer:
    """Wall time of each part of a training step, as trainer-bench times ours: the batch (indexing and
    augmentation), each layer with the modules after it up to the next Conv2d/MaxPool2d/Linear (the groups
    of trainer-bench, named as Keras names them), the loss, and the update (the rest: zero_grad's share,
    RMSprop, the scheduler). Forward: a pre-hook on every module starts its time. Backward: a hook on each
    module's output tensor fires as that tensor's gradient is ready, i.e. as the backward of the module that
    produced it begins (on the CPU autograd runs on the calling thread, one node after another, so the
    stamps are in order); the loss's backward runs before the last module's hook fires. A stamp costs a
    Python call (a few microseconds, about 40 per step), so the throughput loop runs without the hooks.
    Only one LayerTimer per model: its hooks stay."""

    def __init__(self, m):
        self.names, self.group, counts = [], [], {}
        keras = {nn.Conv2d: "conv2d", nn.MaxPool2d: "max_pooling2d", nn.Linear: "dense"}
        for mod in m:
            kind = keras.get(type(mod))
            if kind:
                counts[kind] = counts.get(kind, 0) + 1
                self.names.append("%s_%d" % (kind, counts[kind]))
            self.group.append(len(self.names) - 1)
        self.fwd, self.bwd = [0.0] * len(self.names), [0.0] * len(self.names)
        self.other = {"batch": 0.0, "loss": 0.0, "loss_bwd": 0.0, "update": 0.0}
        self.cur, self.last = None, 0.0
        for i, mod in enumerate(m):
            mod.register_forward_pre_hook(lambda mod, inp, i=i: self.switch(("fwd", self.group[i])))
            mod.register_forward_hook(lambda mod, inp, out, i=i: self.on_output(i, out))

    def on_output(self, i, out):
        if out.requires_grad:
            out.register_hook(lambda g, i=i: self.switch(("bwd", self.group[i])))

    def switch(self, what):
        """From now on time goes to `what`; the time since the last switch to the part that was running."""
        t = time.perf_counter()
        cur = self.cur
        if cur is not None:
            if cur[0] == "fwd":
                self.fwd[cur[1]] += t - self.last
            elif cur[0] == "bwd":
                self.bwd[cur[1]] += t - self.last
            else:
                self.other[cur] += t - self.last
        self.cur, self.last = what, t
        return None

    def clear(self):
        self.fwd, self.bwd = [0.0] * len(self.names), [0.0] * len(self.names)
        self.other = dict.fromkeys(self.other, 0.0)

    def report(self, threads, batch, steps):
        ms = 1e3 / steps
        head = "torch layer threads=%d batch=%d:" % (threads, batch)
        print("%s batch %.3f - -" % (head, self.other["batch"] * ms))
        for name, f, b in zip(self.names, self.fwd, self.bwd):
            print("%s %s %.3f %.3f -" % (head, name, f * ms, b * ms))
        print("%s loss %.3f %.3f -" % (head, self.other["loss"] * ms, self.other["loss_bwd"] * ms))
        print("%s update %.3f - -" % (head, self.other["update"] * ms))


def train_loop(t, xtr, ytr, batch, seconds, timer=None):
    """trainer-bench's training loop: 5 warm-up steps, then steps for `seconds` over shuffled epochs, the
    batch indexed and augmented on this thread; returns (timed steps, seconds, CPU seconds of all threads).
    With a LayerTimer, each part of a timed step is added to it."""
    steps, start, s = 0, None, 0
    mark = timer.switch if timer else None
    while True:
        order = torch.randperm(len(ytr))
        for i in range(0, len(ytr) - batch + 1, batch):
            if s == 5:
                start, cpu0 = time.perf_counter(), time.process_time()
                if timer:
                    timer.clear()
            if timer:
                mark("batch")
            idx = order[i:i + batch]
            t.step(xtr[idx], ytr[idx], mark)
            s += 1
            if start is not None:
                steps += 1
                if time.perf_counter() - start >= seconds:
                    if timer:
                        mark(None)
                    return steps, time.perf_counter() - start, time.process_time() - cpu0


def main():
    mode, d = sys.argv[1], sys.argv[2]
    train_names = ["data_batch_%d.bin" % i for i in range(1, 6)]
    xtr, ytr = load(d, train_names)
    xte, yte = load(d, ["test_batch.bin"])
    torch.manual_seed(int(os.environ.get("SEED", "1")))
    if mode == "bench":
        threads, batch = int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 32
        seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
        # As tuned as ours: exactly `threads` compute threads (trainer-bench.sh also sets OMP_NUM_THREADS and
        # keeps OpenBLAS to 1 thread, whose own pool would otherwise spin beside torch's), no inter-op pool,
        # denormals flushed (cifar-train's kernels never see them either).
        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        torch.set_flush_denormal(True)
        if os.environ.get("PEER_CONFIG") == "1":
            for line in (torch.__config__.show() + torch.__config__.parallel_info()).splitlines():
                print("# " + line)
        where = " device=%s" % DEVICE.type if DEVICE.type != "cpu" else ""
        t = Trainer(foreach=True)
        steps, dt, cpu = train_loop(t, xtr, ytr, batch, seconds)
        print("torch train     threads=%d batch=%d%s: %7.1f img/s (%d steps in %.1f s, %.2f CPU ms per step)" %
              (threads, batch, where, steps * batch / dt, steps, dt, 1e3 * cpu / steps))
        t.m.eval()

        def infer_rate(model):
            """Images/s of `model` over the test images, timed as trainer-bench times ours: one warm-up pass,
            then whole passes for seconds / 2."""
            with torch.no_grad():
                for i in range(0, len(yte) - batch + 1, batch):
                    model((xte[i:i + batch].float() / 255).contiguous(memory_format=torch.channels_last).to(DEVICE))
                n, start = 0, time.perf_counter()
                while time.perf_counter() - start < seconds / 2:
                    for i in range(0, len(yte) - batch + 1, batch):
                        model((xte[i:i + batch].float() / 255).contiguous(memory_format=torch.channels_last).to(DEVICE))
                        n += batch
                if DEVICE.type == "cuda":
                    torch.cuda.synchronize()
            return n, time.perf_counter() - start

        # The strongest inference PyTorch offers on the CPU: the model traced, frozen and passed through
        # optimize_for_inference (oneDNN convolutions with fused ReLU, weights prepacked once); eager no_grad
        # is measured too, and the faster of the two is the peer (docs/benchmarks.md has both).
        modes = [("eager", t.m)]
        if DEVICE.type == "cpu":
            example = (xte[:batch].float() / 255).contiguous(memory_format=torch.channels_last)
            with torch.no_grad():
                modes.append(("optimize_for_inference",
                              torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(t.m, example)))))
        rates = {name: infer_rate(model) for name, model in modes}
        best = max(rates, key=lambda k: rates[k][0] / rates[k][1])
        for name, (n, dt) in rates.items():  # the table (trainer-bench-table.awk) reads the best one's line
            print("torch %s threads=%d batch=%d%s: %7.1f img/s (%d images in %.1f s; %s)" %
                  ("inference" if name == best else "inference-" + name, threads, batch, where, n / dt, n, dt, name))
        layer_seconds = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
        if layer_seconds > 0:
            timer = LayerTimer(t.m)
            steps, _, _ = train_loop(t, xtr, ytr, batch, layer_seconds, timer)
            timer.report(threads, batch, steps)
        # ru_maxrss is in KiB on Linux: the whole process (interpreter, torch's libraries, data, buffers).
        print("torch rss threads=%d batch=%d: %.1f MiB peak resident (getrusage ru_maxrss)" %
              (threads, batch, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
    elif mode == "gpu":
        batch, seconds, math, what, how = int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7]
        tf32 = math == "tf32"
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.set_num_threads(int(os.environ.get("THREADS", "1")))
        t = Trainer()
        if how.startswith("compile"):
            if not hasattr(torch, "compile"):
                print("torch %-5s batch=%d math=%s %s: not measured (this torch has no torch.compile)" % (what, batch, math, how))
                return
            t.m = torch.compile(t.m, mode="default" if how == "compile-default" else "reduce-overhead")
        fixed = None
        if what == "step":
            idx = torch.arange(batch)
            fixed = (augment(xtr[idx]).to(DEVICE), ytr[idx].to(DEVICE))
        steps, start, s = 0, None, 0
        order = torch.randperm(len(ytr))
        while True:
            i = (s * batch) % (len(ytr) - batch + 1)
            if s == 5:
                torch.cuda.synchronize()
                start = time.perf_counter()
            if fixed is None:
                idx = order[i:i + batch]
                t.step(xtr[idx], ytr[idx])
            else:
                t.m.train()
                loss = keras_loss(t.m(fixed[0]), fixed[1])
                t.opt.zero_grad(set_to_none=True)
                loss.backward()
                t.opt.step()
                t.sched.step()
            s += 1
            if start is not None:
                steps += 1
                if time.perf_counter() - start >= seconds:
                    break
        torch.cuda.synchronize()
        dt = time.perf_counter() - start
        print("torch %-5s batch=%d math=%s %s: %9.1f img/s (%d steps in %.1f s)" % (what, batch, math, how, steps * batch / dt, steps, dt))
    elif mode == "train":
        epochs = int(sys.argv[3])
        torch.set_num_threads(int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count())
        t = Trainer()
        t0 = time.perf_counter()
        for e in range(epochs):
            order = torch.randperm(len(ytr))
            loss, right = 0.0, 0
            for i in range(0, len(ytr), 32):
                idx = order[i:i + 32]
                l, r = t.step(xtr[idx], ytr[idx])
                loss, right = loss + l, right + r
            vl, va = t.evaluate(xte, yte)
            print("Epoch %d/%d - loss: %.4f - acc: %.4f - val_loss: %.4f - val_acc: %.4f" %
                  (e + 1, epochs, loss / len(ytr), right / len(ytr), vl, va), flush=True)
        vl, va = t.evaluate(xte, yte)
        print("Test loss: %.6f\nTest accuracy: %.4f\nwall time %.1f s" % (vl, va, time.perf_counter() - t0))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
