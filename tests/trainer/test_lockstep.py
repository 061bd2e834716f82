#!/usr/bin/python3
"""Lockstep test: an independent PyTorch (float64) implementation of the tutorial's Keras recipe trains the
steps that `cifar-train --dump-steps` exported (trainer/src/io/step_export.h), from the same initial weights,
with the same augmented inputs, labels and dropout masks, and is compared with cifar-train step by step.
This separates the arithmetic from the randomness: if the two agree here, a difference in learning can only
come from the random draws (tests/trainer/test_random.py checks those against Keras's definitions).

Written from Keras 2.x's definitions (docs/trainer.md), not from the C code:
  - the data: the CIFAR-10 binary files read here; each epoch is ceil(n / batch) steps, the last one of
    n - (steps - 1) * batch images (Keras's NumpyArrayIterator keeps it and the loss is its mean);
  - the input: ImageDataGenerator's shift, scipy.ndimage.affine_transform(order=1, mode='nearest') with
    offset (tx, ty) per channel, as keras.preprocessing.image.apply_transform calls it, then the flip;
  - the model: Conv2D 32 same, 32 valid, MaxPooling, Dropout 0.25, Conv2D 64 same, 64 valid, MaxPooling,
    Dropout 0.25, Flatten (NHWC order), Dense 512 relu, Dropout 0.5, Dense 10 softmax; inverted dropout;
  - the loss: categorical cross-entropy on the softmax renormalised and clipped to [1e-7, 1 - 1e-7];
  - the update: Keras 2.x RMSprop, a = rho a + (1 - rho) g^2, p -= lr_t g / (sqrt(a) + eps),
    lr_t = lr / (1 + decay * iterations).
Gradients come from torch.autograd.

What is compared, and why not whole trajectories: a float32 run (cifar-train's, or PyTorch's own float32) and
a float64 one drift apart within ~10 steps with no error in either: RMSprop divides each gradient by the root
of its running mean square plus 1e-7, so a weight whose gradient is a near-cancelling sum takes a step whose
size depends on the gradient's last bits, and a max-pool window whose two largest inputs differ by less than
float32 rounding sends its gradient to the other pixel. So the reference restarts from cifar-train's exported
state (state.npy) and takes one step from each: at step 0, every 50th step and the one after it, the first
step of each epoch and each partial batch. Per step: the loss within 1e-4 relative; the update of the weights
(and the RMSprop accumulators) per tensor with a median error below 1e-4 of the tensor's RMS update, and 95% of
all elements within 1e-3 (measured: medians 1e-6 to 3e-6, 95th percentiles about 1e-5). The tail is max-pool
ties: one flipped window changes the kernel gradient of every convolution below it, up to all 65,376
convolution weights (5.2% of the model); measured up to 1.4e-2 at the 99.9th percentile. Recipe errors are far outside: a partial batch averaged over 32 instead of 29 gives a median
error of 5e-2, and ignoring Keras's decay at iteration 1e5 about 9e-2 (the test shows both would fail).

Usage: test_lockstep.py EXPORT_DIR CIFAR_DIR [--expect-decay-visible]
  --expect-decay-visible: the export starts at an iteration count where Keras's decay changes lr_t by more than
  the tolerance; the test then also checks that ignoring the decay would have been caught."""
import json
import os
import sys

import numpy as np
import scipy.ndimage
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "trainer", "bench"))
import cifar_rng  # noqa: E402  (the numpy port of the draws that torch_with_our_draws.py uses)

RTOL = 1e-4      # the loss of a step, relative
MED_TOL = 1e-4   # an update's or accumulator's error over a tensor, median, relative to the tensor's RMS
TAIL_Q, TAIL_TOL = 0.95, 1e-3  # the same, 95th percentile: the 65,376 convolution weights (5.2%) may move
# together when a max-pool tie flips (the docstring)
SHAPES = [("conv2d_1", (3, 3, 3, 32)), ("conv2d_2", (3, 3, 32, 32)), ("conv2d_3", (3, 3, 32, 64)),
          ("conv2d_4", (3, 3, 64, 64)), ("dense_1", (2304, 512)), ("dense_2", (512, 10))]
failures = []


def check(name, ok, detail=""):
    print("%-64s %s%s" % (name, "ok" if ok else "FAIL", "  " + detail if detail else ""))
    if not ok:
        failures.append(name)


def tensor_slices():
    """(name, slice, shape) of every tensor in the flat parameter vector: kernel then bias, layer by layer."""
    out, at = [], 0
    for name, shape in SHAPES:
        n = int(np.prod(shape))
        out.append((name + "/kernel", slice(at, at + n), shape))
        at += n
        out.append((name + "/bias", slice(at, at + shape[-1]), (shape[-1],)))
        at += shape[-1]
    return out, at


def rel_err(ours, ref, scale):
    """Elementwise |ours - ref| / max(|ref|, scale), the worst one."""
    return float(np.max(np.abs(ours - ref) / np.maximum(np.abs(ref), scale)))


def load_cifar(d):
    raw = np.concatenate([np.fromfile(os.path.join(d, "data_batch_%d.bin" % i), np.uint8).reshape(-1, 3073)
                          for i in range(1, 6)])
    return raw[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), raw[:, 0]  # HWC images, labels


def keras_shift_flip(img, tx, ty, flip):
    """keras.preprocessing.image: random_transform's shift (apply_transform) then flip_axis(x, col)."""
    x = img.astype(np.float64) / 255.0
    out = np.stack([scipy.ndimage.affine_transform(x[..., c], np.eye(2), (tx, ty), order=1, mode="nearest")
                    for c in range(x.shape[2])], axis=2)
    return out[:, ::-1] if flip else out


class Recipe:
    """The model and one Keras training step, float64."""

    def __init__(self, params, acc, meta):
        self.slices, total = tensor_slices()
        assert total == params.size == meta["params"], "parameter count"
        self.p = torch.tensor(params, dtype=torch.float64)
        self.a = torch.tensor(acc, dtype=torch.float64)
        self.lr, self.rho, self.eps, self.decay = meta["lr"], meta["rho"], meta["epsilon"], meta["decay"]
        self.iterations = meta["iterations"]
        self.rates = [d["rate"] for d in meta["dropout"]]

    def tensors(self, p):
        return {name: p[s].view(*shape) for name, s, shape in self.slices}

    def loss(self, p, x, y, masks, batch_mean=None):
        t = self.tensors(p)

        def conv(h, name, pad):  # HWIO kernel -> OIHW
            return F.relu(F.conv2d(h, t[name + "/kernel"].permute(3, 2, 0, 1), t[name + "/bias"], padding=pad))

        def drop(h, m, rate):  # masks are NHWC; h is NCHW
            return h * m.view(h.shape[0], h.shape[2], h.shape[3], h.shape[1]).permute(0, 3, 1, 2) / (1 - rate)

        h = x.permute(0, 3, 1, 2)
        h = drop(F.max_pool2d(conv(conv(h, "conv2d_1", 1), "conv2d_2", 0), 2), masks[0], self.rates[0])
        h = drop(F.max_pool2d(conv(conv(h, "conv2d_3", 1), "conv2d_4", 0), 2), masks[1], self.rates[1])
        h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)  # Keras's Flatten of NHWC
        h = F.relu(h @ t["dense_1/kernel"] + t["dense_1/bias"]) * masks[2] / (1 - self.rates[2])
        prob = F.softmax(h @ t["dense_2/kernel"] + t["dense_2/bias"], dim=1)
        prob = (prob / prob.sum(dim=1, keepdim=True)).clamp(1e-7, 1 - 1e-7)
        nll = -torch.log(prob.gather(1, y.view(-1, 1)))
        return nll.sum() / (batch_mean or x.shape[0])

    def lr_t(self, decay=True):
        return self.lr / (1 + (self.decay if decay else 0.0) * self.iterations)

    def step(self, x, y, masks, batch_mean=None, decay=True, commit=True):
        """One step; returns (loss, new params, new accumulators); commit=False leaves the state as it was."""
        p = self.p.clone().requires_grad_(True)
        loss = self.loss(p, x, y, masks, batch_mean)
        (g,) = torch.autograd.grad(loss, p)
        a = self.rho * self.a + (1 - self.rho) * g * g
        new_p = self.p - self.lr_t(decay) * g / (torch.sqrt(a) + self.eps)
        if commit:
            self.p, self.a = new_p, a
            self.iterations += 1
        return loss.item(), new_p, a


def worst_full(ours, ref, slices):
    return max(rel_err(ours[s], ref[s], np.sqrt(np.mean(ref[s] ** 2)) + 1e-30) for _, s, _ in slices)


def main():
    d, data = sys.argv[1], sys.argv[2]
    expect_decay = "--expect-decay-visible" in sys.argv[3:]
    torch.set_num_threads(int(os.environ.get("LOCKSTEP_THREADS", "2")))
    meta = json.load(open(os.path.join(d, "meta.json")))
    npy = {n[:-4]: np.load(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".npy")}
    images, labels = load_cifar(data)
    n, batch, steps = len(images), meta["batch"], int(npy["step"].shape[0])
    print("export: %d steps of batch %d from iteration %d; %d training images" % (steps, batch, meta["iterations"], n))
    check("the export has every step asked for", steps == meta["steps"], "%d of %d" % (steps, meta["steps"]))
    check("training set size", meta["train_images"] == n, "%d vs %d" % (meta["train_images"], n))

    # ---- data: Keras's batches, order, labels and augmented inputs ----
    per_epoch = -(-n // batch)
    epoch, s_in, B = npy["step"][:, 0], npy["step"][:, 1], npy["step"][:, 2]
    want_B = np.where(s_in == per_epoch - 1, n - (per_epoch - 1) * batch, batch)
    check("%d steps per epoch, the last of %d images (kept, not dropped)" % (per_epoch, n - (per_epoch - 1) * batch),
          (s_in < per_epoch).all() and (B == want_B).all())
    check("the export crosses an epoch boundary and a partial batch",
          len(set(epoch.tolist())) > 1 and (B < batch).any() if steps > per_epoch else True)
    order = npy["order"]
    ok = True
    for e in sorted(set(epoch.tolist())):
        rows = np.nonzero(epoch == e)[0]
        seen = np.concatenate([order[t, :B[t]] for t in rows])
        whole = len(rows) == per_epoch
        ok &= len(np.unique(seen)) == len(seen) and (np.sort(seen) == np.arange(n)).all() if whole else \
            len(np.unique(seen)) == len(seen)
    check("each epoch visits every training image once", ok)
    check("padding past the batch is empty", all((order[t, B[t]:] == -1).all() for t in range(steps)))
    check("labels are the images' labels", all((npy["labels"][t, :B[t]] == labels[order[t, :B[t]]]).all()
                                                 for t in range(steps)))
    aug = npy["aug"].astype(np.float64)
    x = npy["x"]
    worst = 0.0
    for t in range(steps):
        for i in range(B[t]):
            ref = keras_shift_flip(images[order[t, i]], aug[t, i, 0], aug[t, i, 1], aug[t, i, 2] > 0.5)
            worst = max(worst, float(np.abs(x[t, i] - ref).max()))
    check("inputs = Keras's shift (scipy affine_transform, order 1, 'nearest') + flip", worst < 2e-6,
          "max abs diff %.2e" % worst)

    # ---- trainer/bench/cifar_rng.py draws exactly these numbers ----
    seed, ok = meta["seed"], True
    for t in range(steps):
        rows, cols, flip = cifar_rng.augment(seed, int(epoch[t]), int(s_in[t]), int(B[t]))
        ok &= (rows == npy["aug"][t, :B[t], 0]).all() and (cols == npy["aug"][t, :B[t], 1]).all() and \
            (flip == (npy["aug"][t, :B[t], 2] > 0.5)).all()
        if t < 3 or B[t] < batch:
            ok &= all((m.reshape(B[t], -1) == npy["mask_" + spec["layer"]][t, :B[t]]).all() for m, spec in
                      zip(cifar_rng.dropout_masks(seed, int(epoch[t]), int(s_in[t]), int(B[t])), meta["dropout"]))
    first = np.nonzero(s_in == 0)[0][0]
    ok &= (cifar_rng.epoch_order(seed, int(epoch[first]), n)[:batch] == order[first]).all()
    if meta["iterations"] == 0:
        init = np.concatenate([np.concatenate([k.ravel(), np.zeros(k.shape[-1], np.float32)])
                               for k in cifar_rng.initial_kernels(seed)])
        ok &= (init == npy["init_params"]).all()
    check("cifar_rng.py reproduces the exported draws (augmentation, masks, order%s)"
          % (", initial weights" if meta["iterations"] == 0 else ""), bool(ok))

    # ---- training: one step from each exported state ----
    # Free-running float32 and float64 runs drift apart within ~10 steps with no error in either (RMSprop's
    # division of near-cancelling gradients, max-pool ties broken differently after float32 rounding), so
    # the reference restarts from cifar-train's own state at every exported one and takes one step.
    masks = [npy["mask_" + m["layer"]] for m in meta["dropout"]]
    for m, spec in zip(masks, meta["dropout"]):
        check("mask %s: %d units per image, 0/1, empty past the batch" % (spec["layer"], spec["units"]),
              m.shape[2] == spec["units"] and m.max() <= 1 and all(not m[t, B[t]:].any() for t in range(steps)))
    states, stride = [int(t) for t in npy["state_steps"]], meta["stride"]
    check("states exported at the epoch boundary and the partial batch",
          all(t in states for t in range(steps) if s_in[t] == 0 or B[t] < batch))
    worst = {"loss": 0.0, "lr": 0.0, "upd_med": 0.0, "upd_tail": 0.0, "acc_med": 0.0, "acc_tail": 0.0, "w": 0.0}
    caught = {}
    for k, t in enumerate(states):
        p0, a0 = npy["state"][k, 0].astype(np.float64), npy["state"][k, 1].astype(np.float64)
        rec = Recipe(p0, a0, dict(meta, iterations=meta["iterations"] + t))
        b = int(B[t])
        xb = torch.tensor(x[t, :b], dtype=torch.float64)
        yb = torch.tensor(npy["labels"][t, :b].astype(np.int64))
        mb = [torch.tensor(m[t, :b].astype(np.float64)) for m in masks]
        full = t + 1 in states
        if full:
            p1, a1 = npy["state"][states.index(t + 1), 0], npy["state"][states.index(t + 1), 1]
        else:
            p1, a1 = npy["params_sampled"][t], None
        pick = (lambda v: v) if full else (lambda v: v[::stride])  # the exported weights of every step
        sl = rec.slices if full else [(nm, slice(-(-s.start // stride), -(-s.stop // stride)), sh)
                                      for nm, s, sh in rec.slices]

        def compare(new_p, new_a):
            """Per tensor, |ours - ref| / RMS(ref) of the update (and of the accumulators): median, TAIL_Q quantile."""
            u_err, a_err = [], []
            for _, s, _ in sl:
                u = pick(new_p)[s] - pick(p0)[s]
                u_err.append(np.abs((p1[s].astype(np.float64) - pick(p0)[s]) - u) / (np.sqrt(np.mean(u * u)) + 1e-30))
                if full:
                    a_err.append(np.abs(a1[s] - new_a[s]) / (np.sqrt(np.mean(new_a[s] ** 2)) + 1e-30))
            u_err = np.concatenate(u_err)
            a_err = np.concatenate(a_err) if full else np.zeros(1)
            return np.median(u_err), np.quantile(u_err, TAIL_Q), np.median(a_err), np.quantile(a_err, TAIL_Q)

        if b < batch:  # Keras's mean over the real batch size, not the nominal one: would the test see it?
            _, alt_p, alt_a = rec.step(xb, yb, mb, batch_mean=batch, commit=False)
            caught["partial"] = compare(alt_p.numpy(), alt_a.numpy())[0] > MED_TOL
        if expect_decay and k == 0:
            _, alt_p, alt_a = rec.step(xb, yb, mb, decay=False, commit=False)
            caught["decay"] = compare(alt_p.numpy(), alt_a.numpy())[0] > MED_TOL
        worst["lr"] = max(worst["lr"], abs(npy["lr_t"][t] - rec.lr_t()) / rec.lr_t())
        loss, new_p, new_a = rec.step(xb, yb, mb)
        new_p, new_a = new_p.numpy(), new_a.numpy()
        worst["loss"] = max(worst["loss"], abs(npy["loss"][t] - loss) / abs(loss))
        um, ut, am, at = compare(new_p, new_a)
        for key, v in (("upd_med", um), ("upd_tail", ut), ("acc_med", am), ("acc_tail", at)):
            worst[key] = max(worst[key], v)
        if full:
            worst["w"] = max(worst["w"], worst_full(p1.astype(np.float64), new_p, rec.slices))
        print("  step %3d (epoch %d, step %3d, B %2d, %s): loss %.6f (ours %.6f); update error median %.1e, "
              "95%% %.1e%s" % (t, epoch[t], s_in[t], b, "all weights" if full else "every %dth" % stride, loss,
                                 npy["loss"][t], um, ut, "; accumulators %.1e, %.1e" % (am, at) if full else ""))
    check("learning rate lr_t of every step (Keras decay)", worst["lr"] < 1e-6, "worst rel %.1e" % worst["lr"])
    check("loss of every step within %.0e" % RTOL, worst["loss"] < RTOL, "worst rel %.1e" % worst["loss"])
    check("update of every weight: median error below %.0e of the tensor's RMS update" % MED_TOL,
          worst["upd_med"] < MED_TOL, "worst %.1e" % worst["upd_med"])
    check("update: 95%% of weights within %.0e (the tail: max-pool ties)" % TAIL_TOL, worst["upd_tail"] < TAIL_TOL,
          "worst %.1e" % worst["upd_tail"])
    check("RMSprop accumulators: median %.0e, 95%% %.0e" % (MED_TOL, TAIL_TOL),
          worst["acc_med"] < MED_TOL and worst["acc_tail"] < TAIL_TOL,
          "worst %.1e, %.1e" % (worst["acc_med"], worst["acc_tail"]))
    print("  (for information: worst weight after a step, relative to max(|w|, RMS): %.1e)" % worst["w"])
    if "partial" in caught:
        check("a partial batch averaged over %d instead of its size would fail" % batch, caught["partial"])
    if expect_decay:
        check("at iteration %d, ignoring the decay (lr_t %.4g vs %.4g) would fail"
              % (meta["iterations"], meta["lr"], meta["lr"] / (1 + meta["decay"] * meta["iterations"])),
              bool(caught.get("decay")))
    if failures:
        print("FAILED: %d check(s): %s" % (len(failures), "; ".join(failures)))
        return 1
    print("cifar-train and the independent Keras recipe agree: %d steps' data, %d steps retrained" % (steps, len(states)))
    return 0


sys.exit(main())
