#!/usr/bin/python3
"""The random components of a training run (tests/trainer/random_dump.c, drawn by the trainer's own code at a
fixed seed) against Keras 2.x's definitions, written from Keras, not from the C code:
  - ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1, horizontal_flip=True) on 32x32 images:
    per image tx ~ U(-0.1, 0.1) * 32 rows, ty ~ U(-0.1, 0.1) * 32 columns, real-valued (not whole pixels),
    a flip with probability 0.5, all independent, between images and between steps;
  - Dropout(rate): each unit kept with probability 1 - rate, independently of other units, images, layers
    and steps;
  - NumpyArrayIterator(shuffle=True): a fresh uniform permutation of the training set every epoch;
  - glorot_uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out)), fan = receptive field x channels; zero biases;
  - and the counter-based streams behind them (augmentation, each dropout layer, shuffle) uniform, and
    uncorrelated with one another and between ranks 0 and 1 at the same (epoch, step).
  - the generator under all of them, Philox4x32-10, against the known-answer vectors published with
    Random123 (kat_vectors: philox4x32 10 rounds), so that it is the generator its authors tested.
(Keras 2.x RMSprop's decay at ~1e5 iterations and the last partial batch are checked by test_lockstep.py.)
Means, variances and agreement rates are z-tests, histograms chi-square tests (Wilson-Hilferty z); the seed is
fixed, so the result is too; a check fails when |z| > 5. Usage: test_random.py DUMP.bin"""
import sys
import numpy as np

ZMAX = 5.0
failures = []


def report(name, z, extra=""):
    ok = abs(z) <= ZMAX
    print("%-58s z = %+7.2f %s%s" % (name, z, "ok" if ok else "FAIL", extra))
    if not ok:
        failures.append(name)


def chi2_z(observed, expected):
    """Chi-square statistic of counts as a standard normal z (Wilson-Hilferty), positive = too uneven."""
    observed, expected = np.asarray(observed, float).ravel(), np.asarray(expected, float).ravel()
    c = ((observed - expected) ** 2 / expected).sum()
    k = observed.size - 1
    return ((c / k) ** (1 / 3) - (1 - 2 / (9 * k))) / np.sqrt(2 / (9 * k))


def mean_z(x, mu, sd):
    return (x.mean() - mu) / (sd / np.sqrt(x.size))


def corr_z(a, b):
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    return np.corrcoef(a, b)[0, 1] * np.sqrt(a.size)


def agree_z(a, b, p_same):
    """Fraction of positions where two 0/1 arrays agree, against p_same for independent draws."""
    same = (a == b).mean()
    return (same - p_same) / np.sqrt(p_same * (1 - p_same) / a.size)


def uniform_checks(name, x, lo, hi, bins=64):
    w = hi - lo
    report(name + ": inside [%.1f, %.1f)" % (lo, hi), 0.0 if (x >= lo).all() and (x < hi).all() else 99.0)
    report(name + ": mean", mean_z(x, (lo + hi) / 2, w / np.sqrt(12)))
    var, m4 = w * w / 12, w ** 4 / 80
    report(name + ": variance", (x.var() - var) / np.sqrt((m4 - var * var) / x.size))
    h = np.histogram(x, bins=bins, range=(lo, hi))[0]
    report(name + ": histogram (%d bins)" % bins, chi2_z(h, np.full(bins, x.size / bins)))


def main():
    raw = open(sys.argv[1], "rb").read()
    steps, batch, dsteps, epochs, n, nparams = np.frombuffer(raw, np.int32, 6)
    at = 24

    # ---- augmentation ----
    aug = np.frombuffer(raw, np.float32, steps * batch * 3, at).reshape(steps, batch, 3).astype(np.float64)
    at += aug.nbytes // 2
    rows, cols, flip = aug[..., 0], aug[..., 1], aug[..., 2]
    print("augmentation: %d images" % rows.size)
    for name, s in (("shift rows (height_shift_range 0.1 x 32)", rows), ("shift cols (width_shift_range 0.1 x 32)", cols)):
        uniform_checks(name, s.ravel(), -3.2, 3.2)
        inner = s[np.abs(s) < 3.0]  # whole pixels only, so that every fraction is equally likely
        frac = inner - np.floor(inner)
        h = np.histogram(frac, bins=20, range=(0, 1))[0]
        report(name + ": real-valued (fraction of a pixel uniform)", chi2_z(h, np.full(20, frac.size / 20)))
    report("flip probability 0.5", mean_z(flip.ravel(), 0.5, 0.5))
    report("corr(rows, cols) same image", corr_z(rows, cols))
    report("corr(rows, flip) same image", corr_z(rows, flip))
    report("corr(cols, flip) same image", corr_z(cols, flip))
    h2 = np.histogram2d(rows.ravel(), cols.ravel(), bins=8, range=[[-3.2, 3.2], [-3.2, 3.2]])[0]
    report("joint histogram rows x cols (8x8)", chi2_z(h2, np.full(64, rows.size / 64)))
    for name, a in (("rows", rows), ("cols", cols), ("flip", flip)):
        report("corr(%s) image i vs i+1 of a batch" % name, corr_z(a[:, :-1], a[:, 1:]))
        report("corr(%s) step s vs s+1, same slot" % name, corr_z(a[:-1], a[1:]))
    report("corr(rows) epoch e vs e+1, same step and slot", corr_z(rows[:-1000], rows[1000:]))

    # ---- dropout ----
    n1, n2, n3 = batch * 15 * 15 * 32, batch * 6 * 6 * 64, batch * 512
    drop = np.frombuffer(raw, np.uint8, dsteps * (n1 + n2 + n3), at).reshape(dsteps, -1)
    at += drop.nbytes
    layers = [("dropout_1 (0.25)", drop[:, :n1].reshape(dsteps, batch, -1), 0.75),
              ("dropout_2 (0.25)", drop[:, n1:n1 + n2].reshape(dsteps, batch, -1), 0.75),
              ("dropout_3 (0.5)", drop[:, n1 + n2:].reshape(dsteps, batch, -1), 0.5)]
    print("dropout: %d steps, %d units per step" % (dsteps, n1 + n2 + n3))
    for name, m, p in layers:
        same = p * p + (1 - p) * (1 - p)
        report(name + ": keep rate", mean_z(m.ravel().astype(float), p, np.sqrt(p * (1 - p))))
        report(name + ": independent of the previous step", agree_z(m[1:], m[:-1], same))
        report(name + ": independent between images", agree_z(m[:, 1:], m[:, :-1], same))
        report(name + ": independent between neighbouring units", agree_z(m[..., 1:], m[..., :-1], same))
        report(name + ": independent 7 units apart", agree_z(m[..., 7:], m[..., :-7], same))
    for (na, a, pa), (nb, b, pb) in ((layers[0], layers[1]), (layers[1], layers[2]), (layers[0], layers[2])):
        k = b.shape[2]
        report("%s vs %s: independent layers" % (na[:9], nb[:9]),
               agree_z(a[..., :k], b, pa * pb + (1 - pa) * (1 - pb)))

    # ---- shuffle ----
    order = np.frombuffer(raw, np.uint32, epochs * n, at).reshape(epochs, n).astype(np.int64)
    at += epochs * n * 4
    print("sample order: %d epochs of %d images" % (epochs, n))
    report("every epoch a permutation", 0.0 if all((np.sort(o) == np.arange(n)).all() for o in order) else 99.0)
    pos = np.argsort(order, axis=1)  # pos[e, image]
    bins = 10
    table = np.zeros((bins, bins))
    np.add.at(table, ((np.arange(n) * bins // n)[None, :].repeat(epochs, 0), pos * bins // n), 1)
    expect = np.outer(np.bincount(np.arange(n) * bins // n), np.bincount(np.arange(n) * bins // n)) * epochs / n
    report("position of an image uniform (image x position 10x10)", chi2_z(table, expect))
    report("corr(position) epoch e vs e+1", corr_z(pos[:-1], pos[1:]))
    report("reshuffled each epoch (fixed points vs 1/n)",
           mean_z((order[1:] == order[:-1]).ravel().astype(float), 1 / n, np.sqrt((1 / n) * (1 - 1 / n))))
    # two given images in the same batch in two epochs: independent events, P = (batch-1)/(n-1) each
    same_batch = (pos[:, 0] // batch == pos[:, 1] // batch).astype(float)
    report("pair of images shares a batch at rate (B-1)/(n-1)",
           mean_z(same_batch, (batch - 1) / (n - 1), np.sqrt((batch - 1) / (n - 1))))

    # ---- glorot_uniform ----
    params = np.frombuffer(raw, np.float32, nparams, at).astype(np.float64)
    at += nparams * 4
    shapes = [(3, 3, 3, 32), (32,), (3, 3, 32, 32), (32,), (3, 3, 32, 64), (64,), (3, 3, 64, 64), (64,),
              (2304, 512), (512,), (512, 10), (10,)]
    print("glorot_uniform initial weights")
    off = 0
    for s in shapes:
        w = params[off:off + int(np.prod(s))]
        off += w.size
        if len(s) == 1:
            report("bias %s zero" % (s,), 0.0 if (w == 0).all() else 99.0)
            continue
        rf = int(np.prod(s[:-2]))
        limit = np.sqrt(6.0 / (rf * s[-2] + rf * s[-1]))
        uniform_checks("kernel %s / limit" % (s,), w / limit, -1.0, 1.0 + 1e-9, bins=min(64, w.size // 50))

    # ---- the streams are independent of one another and across ranks ----
    keys = int(np.frombuffer(raw, np.int32, 1, at)[0])
    at += 4
    u = np.frombuffer(raw, np.float32, keys * 2 * 5 * 64, at).reshape(keys, 2, 5, 64).astype(np.float64)
    at += u.nbytes // 2
    kat = np.frombuffer(raw, np.uint32, 12, at).reshape(3, 4)
    at += kat.nbytes
    assert at == len(raw), "dump has %d bytes, read %d" % (len(raw), at)
    names = ["augmentation", "dropout_1", "dropout_2", "dropout_3", "shuffle"]
    print("streams: %d keys x 64 draws, ranks 0 and 1" % keys)
    for i in range(5):
        report("%s stream uniform" % names[i], chi2_z(np.histogram(u[:, :, i], bins=64, range=(0, 1))[0],
                                                      np.full(64, u[:, :, i].size / 64)))
        report("%s: rank 0 vs rank 1 uncorrelated" % names[i], corr_z(u[:, 0, i], u[:, 1, i]))
        for j in range(i + 1, 5):
            report("%s vs %s: uncorrelated" % (names[i], names[j]), corr_z(u[:, 0, i], u[:, 0, j]))
            joint = np.histogram2d(u[:, 0, i].ravel(), u[:, 0, j].ravel(), bins=8, range=[[0, 1], [0, 1]])[0]
            report("%s vs %s: joint histogram (8x8)" % (names[i], names[j]), chi2_z(joint, np.full(64, joint.sum() / 64)))
    # Random123's kat_vectors for philox4x32_R(10): counter and key 0; all ones; the hex digits of pi.
    published = [[0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
                 [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]]
    for t in range(3):
        same = [int(v) for v in kat[t]] == published[t]
        print("philox4x32-10 known-answer vector %d: %s %s" % (t, " ".join("%08x" % v for v in kat[t]),
                                                               "ok" if same else "FAIL"))
        if not same:
            failures.append("philox known-answer vector %d" % t)
    if failures:
        print("FAILED: %d check(s): %s" % (len(failures), "; ".join(failures)))
        return 1
    print("all random components match Keras's definitions")
    return 0


sys.exit(main())
