#!/usr/bin/python3
"""The PyTorch peer's training run (torch_peer.py: same model, augmentation, loss and optimizer) fed with
cifar-train's own random draws (cifar_rng.py) for any of: the initial weights, the sample order, the
augmentation and the dropout masks; the others come from torch. It separates what a run learns because of
its arithmetic from what it learns because of its random numbers (issue 12, docs/benchmarks.md).

  torch_with_our_draws.py DATA_DIR EPOCHS SEED THREADS [init,order,aug,drop | none]

The model flattens in NHWC order (Keras's, so that cifar-train's dense_1 kernel means the same) and applies
dropout as explicit inverted masks. Prints one line per epoch and the final test accuracy."""
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cifar_rng  # noqa: E402
from torch_peer import augment, keras_loss, load  # noqa: E402


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 32, 3),
                                    nn.Conv2d(32, 64, 3, padding=1), nn.Conv2d(64, 64, 3)])
        self.dense = nn.ModuleList([nn.Linear(2304, 512), nn.Linear(512, 10)])

    def forward(self, x, masks):
        """masks: three float tensors (NHWC per image) already scaled by 1 / (1 - rate), or None (inference)."""
        h = x
        for i, conv in enumerate(self.convs):
            h = F.relu(conv(h))
            if i % 2:
                h = F.max_pool2d(h, 2).permute(0, 2, 3, 1)  # NHWC from here on, as the masks are
                h = (h * masks[i // 2] if masks else h).permute(0, 3, 1, 2)
        h = F.relu(self.dense[0](h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)))
        return self.dense[1](h * masks[2] if masks else h)

    def init(self, seed, ours):
        layers = list(self.convs) + list(self.dense)
        kernels = cifar_rng.initial_kernels(seed) if ours else [None] * len(layers)
        for layer, k in zip(layers, kernels):
            if k is None:
                nn.init.xavier_uniform_(layer.weight)
            else:
                w = torch.from_numpy(k)
                layer.weight.data.copy_(w.permute(3, 2, 0, 1) if w.dim() == 4 else w.t())
            nn.init.zeros_(layer.bias)


def masks_for(seed, epoch, step, batch, ours):
    if ours:
        kept = cifar_rng.dropout_masks(seed, epoch, step, batch)
    else:
        kept = [torch.rand((batch,) + shape) >= rate for shape, rate in cifar_rng.DROPOUTS]
    return [torch.as_tensor(np.asarray(k), dtype=torch.float32) / (1 - rate)
            for k, (_, rate) in zip(kept, cifar_rng.DROPOUTS)]


def main():
    d, epochs, seed, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ours = set(sys.argv[5].split(",")) - {"none"} if len(sys.argv) > 5 else {"init", "order", "aug", "drop"}
    if not ours <= {"init", "order", "aug", "drop"}:
        sys.exit("components: init, order, aug, drop, or none")
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    xtr, ytr = load(d, ["data_batch_%d.bin" % i for i in range(1, 6)])
    xte, yte = load(d, ["test_batch.bin"])
    n, batch = len(ytr), 32
    m = Model()
    m.init(seed, "init" in ours)
    opt = torch.optim.RMSprop(m.parameters(), lr=1e-4, alpha=0.9, eps=1e-7)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: 1.0 / (1.0 + 1e-6 * it))
    print("cifar-train's draws for: %s; torch's for the rest; seed %d" % (",".join(sorted(ours)) or "none", seed))
    t0 = time.time()
    for e in range(epochs):
        order = torch.from_numpy(cifar_rng.epoch_order(seed, e, n)) if "order" in ours else torch.randperm(n)
        m.train()
        loss_sum = 0.0
        for s in range(-(-n // batch)):
            idx = order[s * batch:(s + 1) * batch]
            B = len(idx)
            draws = None
            if "aug" in ours:
                rows, cols, flip = cifar_rng.augment(seed, e, s, B)
                draws = (torch.from_numpy(cols), torch.from_numpy(rows), torch.from_numpy(flip))
            loss = keras_loss(m(augment(xtr[idx], draws), masks_for(seed, e, s, B, "drop" in ours)), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * B
        m.eval()
        with torch.no_grad():
            val = (m(xte.float() / 255, None).argmax(1) == yte).float().mean().item()
        print("Epoch %d/%d - loss: %.4f - val_acc: %.4f - %.0f s" % (e + 1, epochs, loss_sum / n, val, time.time() - t0),
              flush=True)
    print("Test accuracy: %.4f" % val)


if __name__ == "__main__":
    main()
