#!/usr/bin/python3
"""Independent numpy (float64) reference of one training step of the tutorial's model, compared with the
trainer's (tests/trainer/step_dump.c) to 1e-4 relative: loss, every gradient, updated weights and RMSprop
accumulators. Written from trainer.md's recipe, not from the C code: Keras layers in NHWC, 'same'/'valid'
3x3 convolutions, 2x2 max-pooling (floor), inverted dropout with the given masks, softmax + categorical
cross-entropy with Keras's clipping, RMSprop with Keras 2.x's decay; and the losses of the inference pass
(no dropout) on the weights before the step, image by image and for the batch. Usage: test_step.py DUMP.bin
With --against REF.bin: DUMP.bin's step (another instruction set's) against REF.bin's instead, its inputs
bit for bit and every result within 1e-4 relative, the tolerance both are held to against numpy here."""
import sys
import numpy as np

SHAPES = [("conv2d_1", (3, 3, 3, 32)), ("conv2d_2", (3, 3, 32, 32)), ("conv2d_3", (3, 3, 32, 64)),
          ("conv2d_4", (3, 3, 64, 64)), ("dense_1", (2304, 512)), ("dense_2", (512, 10))]


def split(flat):
    out, at = {}, 0
    for name, shape in SHAPES:
        n = int(np.prod(shape))
        out[name + "/kernel"] = flat[at:at + n].reshape(shape); at += n
        out[name + "/bias"] = flat[at:at + shape[-1]]; at += shape[-1]
    assert at == flat.size
    return out


def conv(x, w, b, pad):
    """y[b,i,j,o] = sum_{ky,kx,c} xpad[b,i+ky,j+kx,c] w[ky,kx,c,o] + bias[o]; returns y and a backward."""
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh, ow = xp.shape[1] - 2, xp.shape[2] - 2
    y = b.copy().reshape(1, 1, 1, -1) + np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for ky in range(3):
        for kx in range(3):
            y += np.einsum("bijc,co->bijo", xp[:, ky:ky + oh, kx:kx + ow, :], w[ky, kx])

    def backward(dy):
        dw = np.zeros_like(w)
        dxp = np.zeros_like(xp)
        for ky in range(3):
            for kx in range(3):
                dw[ky, kx] = np.einsum("bijc,bijo->co", xp[:, ky:ky + oh, kx:kx + ow, :], dy)
                dxp[:, ky:ky + oh, kx:kx + ow, :] += np.einsum("bijo,co->bijc", dy, w[ky, kx])
        dx = dxp[:, pad:dxp.shape[1] - pad, pad:dxp.shape[2] - pad, :]
        return dx, dw, dy.sum(axis=(0, 1, 2))
    return y, backward


def maxpool(x):
    n, h, w, c = x.shape
    oh, ow = h // 2, w // 2
    win = x[:, :2 * oh, :2 * ow, :].reshape(n, oh, 2, ow, 2, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, oh, ow, c, 4)
    arg = win.argmax(axis=-1)  # first maximum in (dy, dx) row-major order, as TensorFlow
    y = win.max(axis=-1)

    def backward(dy):
        dwin = np.zeros_like(win)
        np.put_along_axis(dwin, arg[..., None], dy[..., None], axis=-1)
        dx = np.zeros_like(x)
        dx[:, :2 * oh, :2 * ow, :] = dwin.reshape(n, oh, ow, c, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(n, 2 * oh, 2 * ow, c)
        return dx
    return y, backward


def forward(W, x, labels, s1, s2, s3):
    """The forward pass with inverted dropout's factors s1, s2, s3 (mask / keep; 1 at inference): each
    image's loss and the values backward needs."""
    B = x.shape[0]
    relu = lambda v: np.maximum(v, 0)
    z1, bw1 = conv(x, W["conv2d_1/kernel"], W["conv2d_1/bias"], 1); h1 = relu(z1)
    z2, bw2 = conv(h1, W["conv2d_2/kernel"], W["conv2d_2/bias"], 0); h2 = relu(z2)
    q1, bwp1 = maxpool(h2); d1 = q1 * s1
    z3, bw3 = conv(d1, W["conv2d_3/kernel"], W["conv2d_3/bias"], 1); h3 = relu(z3)
    z4, bw4 = conv(h3, W["conv2d_4/kernel"], W["conv2d_4/bias"], 0); h4 = relu(z4)
    q2, bwp2 = maxpool(h4); d2 = q2 * s2
    flat = d2.reshape(B, -1)
    z5 = flat @ W["dense_1/kernel"] + W["dense_1/bias"]; h5 = relu(z5); d3 = h5 * s3
    z6 = d3 @ W["dense_2/kernel"] + W["dense_2/bias"]
    e = np.exp(z6 - z6.max(axis=1, keepdims=True)); p = e / e.sum(axis=1, keepdims=True)
    onehot = np.eye(10)[labels]
    pc = np.clip(p, 1e-7, 1 - 1e-7)
    losses = -(onehot * np.log(pc)).sum(axis=1)
    return locals()


TOL = 1e-4


def rel(name, ours, ref):
    err = np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-30)
    print("%-22s max|diff|/max|ref| = %.2e %s" % (name, err, "ok" if err <= TOL else "FAIL"))
    return err <= TOL


def read_dump(path):
    """step_dump's file as named float64 arrays (step_dump.c gives the layout)."""
    raw = open(path, "rb").read()
    B, N = (int(v) for v in np.frombuffer(raw[:8], dtype=np.int32))
    f = np.frombuffer(raw[8:], dtype=np.float32).astype(np.float64)
    d, at = {"B": B, "N": N}, 0
    for name, n in (("p0", N), ("a0", N), ("x", B * 3072), ("labels", B), ("m1", B * 15 * 15 * 32),
                    ("m2", B * 6 * 6 * 64), ("m3", B * 512), ("scalars", 4), ("grad", N), ("p1", N), ("a1", N),
                    ("infer", B), ("infer_sum", 1)):
        d[name] = f[at:at + n]
        at += n
    assert at == f.size, "%s: %d floats, not step_dump's %d" % (path, f.size, at)
    return d


def against(ref_path, path):
    """Two runs of step_dump (two instruction sets): the same inputs, results within TOL."""
    ref, ours = read_dump(ref_path), read_dump(path)
    ok = True
    for k in ("B", "N", "p0", "a0", "x", "labels", "m1", "m2", "m3"):
        same = np.array_equal(ref[k], ours[k])
        print("%-22s %s" % ("input " + k, "bit-identical" if same else "DIFFERS (FAIL)"))
        ok &= same
    ok &= np.array_equal(ref["scalars"][:3], ours["scalars"][:3])
    ok &= rel("loss", ours["scalars"][3:], ref["scalars"][3:])
    cg, rg = split(ours["grad"]), split(ref["grad"])
    for n, _ in SHAPES:
        for t in ("kernel", "bias"):
            ok &= rel("grad " + n + "/" + t, cg[n + "/" + t], rg[n + "/" + t])
    ok &= rel("accumulators", ours["a1"], ref["a1"])
    ok &= rel("update (p1 - p0)", ours["p1"] - ours["p0"], ref["p1"] - ref["p0"])
    ok &= rel("inference, each image", ours["infer"], ref["infer"])
    ok &= rel("inference, the batch", ours["infer_sum"], ref["infer_sum"])
    sys.exit(0 if ok else 1)


def main():
    if sys.argv[1] == "--against":
        against(sys.argv[2], sys.argv[3])
    d = read_dump(sys.argv[1])
    B, N = d["B"], d["N"]
    p0, a0 = d["p0"], d["a0"]
    x = d["x"].reshape(B, 32, 32, 3)
    labels = d["labels"].astype(int)
    m1 = d["m1"].reshape(B, 15, 15, 32)
    m2 = d["m2"].reshape(B, 6, 6, 64)
    m3 = d["m3"].reshape(B, 512)
    lr_t, rho, eps, c_loss = d["scalars"]
    c_grad, c_p1, c_a1 = d["grad"], d["p1"], d["a1"]
    c_infer, c_infer_sum = d["infer"], d["infer_sum"]
    W = split(p0)
    v = forward(W, x, labels, m1 / 0.75, m2 / 0.75, m3 / 0.5)
    bw1, bw2, bw3, bw4, bwp1, bwp2 = v["bw1"], v["bw2"], v["bw3"], v["bw4"], v["bwp1"], v["bwp2"]
    z1, z2, z3, z4, z5, d3, flat, p, pc, onehot = (v[k] for k in ("z1", "z2", "z3", "z4", "z5", "d3", "flat", "p",
                                                                   "pc", "onehot"))
    loss = v["losses"].mean()

    # backward
    inside = (p >= 1e-7) & (p <= 1 - 1e-7)
    dp = np.where(inside, -onehot / pc, 0) / B
    dz6 = p * (dp - (dp * p).sum(axis=1, keepdims=True))
    g = {"dense_2/kernel": d3.T @ dz6, "dense_2/bias": dz6.sum(0)}
    dz5 = (dz6 @ W["dense_2/kernel"].T) * m3 / 0.5 * (z5 > 0)
    g["dense_1/kernel"] = flat.T @ dz5; g["dense_1/bias"] = dz5.sum(0)
    dz4 = bwp2((dz5 @ W["dense_1/kernel"].T).reshape(B, 6, 6, 64) * m2 / 0.75) * (z4 > 0)
    dh3, g["conv2d_4/kernel"], g["conv2d_4/bias"] = bw4(dz4)
    dd1, g["conv2d_3/kernel"], g["conv2d_3/bias"] = bw3(dh3 * (z3 > 0))
    dz2 = bwp1(dd1 * m1 / 0.75) * (z2 > 0)
    dh1, g["conv2d_2/kernel"], g["conv2d_2/bias"] = bw2(dz2)
    _, g["conv2d_1/kernel"], g["conv2d_1/bias"] = bw1(dh1 * (z1 > 0))
    grad = np.concatenate([g[n + "/" + t].ravel() for n, _ in SHAPES for t in ("kernel", "bias")])

    # RMSprop (Keras 2.x)
    a1 = rho * a0 + (1 - rho) * grad ** 2
    p1 = p0 - lr_t * grad / (np.sqrt(a1) + eps)

    ok = rel("loss", np.array([c_loss]), np.array([loss]))
    cg, rg = split(c_grad), split(grad)
    for n, _ in SHAPES:
        for t in ("kernel", "bias"):
            ok &= rel("grad " + n + "/" + t, cg[n + "/" + t], rg[n + "/" + t])
    ok &= rel("accumulators", c_a1, a1)
    ok &= rel("update (p1 - p0)", c_p1 - p0, p1 - p0)
    # Inference (no dropout) on the parameters before the step: the CPU's inference engine (cpu_infer.h).
    ref_infer = forward(W, x, labels, 1, 1, 1)["losses"]
    ok &= rel("inference, each image", c_infer, ref_infer)
    ok &= rel("inference, the batch", c_infer_sum, ref_infer.sum(keepdims=True))
    print("loss %.6f (trainer %.6f), lr_t %.8g" % (loss, c_loss, lr_t))
    sys.exit(0 if ok else 1)


main()
