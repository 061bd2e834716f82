#!/usr/bin/env python3
"""The data-parallel scaling model of docs/scaling-model.md: fits its constants to the 2-host points of
`make bench-scaling` (MEASURED below, copied from its table) and prints the doc's tables.

  python3 trainer/bench/scaling_model.py        (or: make scaling-model)

Per step, one rank:  T(N) = C + max(0, A(N) - H)
  C      compute (forward, backward, update) as measured in the 2-host runs
  A(N)   the ring allreduce of S bytes alone: 2 (N-1)/N x S / B + 2 (N-1) x alpha (+ X16 with fp16)
  H      the window of backward the allreduce can hide behind (fitted: one value per side for all rates)
Fit: measured against model at each link rate, efficiency there against the 1p1t step T1. Predictions:
efficiency C / T(N), C one process's compute. No dependencies."""
import math

# make bench-scaling, ROUNDS=3, medians (ms per step; ar: the allreduce alone on the link). Filled from
# docs/benchmarks.md's table of the run named there.
S_CIFAR = 1250858 * 4  # bytes of cifar-train's gradients (float32)
RTT_US = 63.6          # hostnet veth round trip, one byte (hostnet_link.py, the 10 Gbit/s link of that run)
MEASURED = {
    # side: {"1p1t": step ms, rate Gbit/s: (comp, wait, ar, comp16, wait16, ar16)}
    "ours": {"1p1t": 18.74, 1: (23.18, 27.98, 42.13, 24.45, 3.73, 20.91), 10: (22.98, 0.66, 4.15, 24.10, 0.80, 2.08),
             25: (23.51, 0.71, 2.05, 23.97, 0.82, 1.62)},
    "torch": {"1p1t": 1e3 * 32 / 1156.2, 1: (35.52, 25.98, 41.89, 45.50, 8.25, 20.95),
              10: (34.48, 5.09, 6.05, 46.26, 6.57, 8.19), 25: (34.65, 4.65, 5.19, 45.65, 7.33, 8.55)},
}

# Predictions: one-way latency per ring hop on a data-centre network, and the model of the issue.
ALPHA_PRED_S = 25e-6
S_RESNET50 = 25e6 * 4
# ResNet-50 compute per step on a named GPU: 110.93 ms, batch 128, Tesla V100-SXM2, AMP, NHWC
# (github.com/sandeepkumar-skb/pytorch_experiments, torchvision_exp/README.md). A parameter: change it here.
C_RESNET50_MS = 110.93


def ring_ms(n, s_bytes, b_gbit, alpha_s):
    return (2 * (n - 1) / n * s_bytes * 8 / (b_gbit * 1e9) + 2 * (n - 1) * alpha_s) * 1e3


def fit_h(points):
    """The H minimising the squared error of max(0, ar - H) against the measured waits."""
    best = None
    top = max(ar for _, _, ar in points)
    for i in range(0, 2001):
        h = top * i / 2000
        err = sum((max(0.0, ar - h) - w) ** 2 for _, w, ar in points)
        if best is None or err < best[0]:
            best = (err, h)
    return best[1]


def fit(side):
    m = MEASURED[side]
    rates = sorted(r for r in m if r != "1p1t")
    alpha = RTT_US / 2 * 1e-6
    pts = [(m[r][0], m[r][1], m[r][2]) for r in rates] + [(m[r][3], m[r][4], m[r][5]) for r in rates]
    h = fit_h([p for p in pts if not math.isnan(p[2])])
    c = sorted(p[0] for p in pts)[len(pts) // 2]
    # B: what the side's transport got through at each rate (N = 2: A = S / B + 2 alpha)
    beff = {r: S_CIFAR * 8 / ((m[r][2] - 2 * alpha * 1e3) * 1e-3) / 1e9 for r in rates}
    # eta: the share of the link's rate at the slowest rate, where the link (not the CPU) limits
    eta = beff[rates[0]] / rates[0]
    # X16: what fp16 adds beyond halving the bytes, per byte of float32 gradients, at that rate
    x16 = max(0.0, m[rates[0]][5] - (m[rates[0]][2] - 2 * alpha * 1e3) / 2 - 2 * alpha * 1e3) / S_CIFAR
    return {"rates": rates, "alpha": alpha, "H": h, "C": c, "beff": beff, "eta": eta, "x16": x16, "T1": m["1p1t"]}


def print_fit(side, f):
    m = MEASURED[side]
    print("%s: C %.2f ms (median compute of its 2-host rows), H %.2f ms (fitted), alpha %.1f us (RTT/2), "
          "1p1t %.2f ms, eta %.2f (B / link rate at %g Gbit/s), fp16 extra %.2f ms per 5 MB" % (
              side, f["C"], f["H"], f["alpha"] * 1e6, f["T1"], f["eta"], f["rates"][0], f["x16"] * S_CIFAR))
    print("| link | fp16 | B Gbit/s | ar ms | wait ms measured | wait ms model | step ms measured | step ms model "
          "| eff measured | eff model |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in f["rates"]:
        for k, name in ((0, "no"), (3, "yes")):
            comp, wait, ar = m[r][k:k + 3]
            if math.isnan(ar):
                continue
            wm = max(0.0, ar - f["H"])
            b = S_CIFAR * (0.5 if k else 1) * 8 / ((ar - 2 * f["alpha"] * 1e3) * 1e-3) / 1e9
            print("| %g Gbit/s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                r, name, b, ar, wait, wm, comp + wait, f["C"] + wm, f["T1"] / (comp + wait), f["T1"] / (f["C"] + wm)))
    print()


def predict(title, c_ms, h_ms, s_bytes, eta, x16):
    """Efficiency C / T(N): each rank's compute as one process's (cores of its own, not shared with the
    transport as on the VM the constants come from)."""
    print(title)
    nodes = (4, 8, 16, 32, 64, 128)
    print("| link | fp16 | " + " | ".join("N=%d" % n for n in nodes) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in nodes) + " |")
    for rate in (25, 100, 200):
        for fp16 in (False, True):
            row = []
            for n in nodes:
                s = s_bytes / 2 if fp16 else s_bytes
                a = ring_ms(n, s, eta * rate, ALPHA_PRED_S) + (x16 * s_bytes if fp16 else 0.0)
                row.append("%.2f" % (c_ms / (c_ms + max(0.0, a - h_ms))))
            print("| %d Gbit/s | %s | %s |" % (rate, "yes" if fp16 else "no", " | ".join(row)))
    print()


def main():
    fits = {side: fit(side) for side in MEASURED}
    print("## Fit to the 2-host points (measured: make bench-scaling; model: this script)\n")
    for side, f in fits.items():
        print_fit(side, f)
    f = fits["ours"]
    print("## Predictions (not measurements): efficiency C / T(N), ring allreduce, alpha %.0f us per hop, "
          "B = %.2f x link rate\n" % (ALPHA_PRED_S * 1e6, f["eta"]))
    share = f["H"] / f["C"]
    predict("cifar-train, compute as one process on this VM's core (C = 1p1t %.2f ms, H = %.2f x C, S %.1f MB):" % (
        f["T1"], share, S_CIFAR / 1e6), f["T1"], share * f["T1"], S_CIFAR, f["eta"], f["x16"])
    predict("ResNet-50-sized model, 25 M parameters (S %.0f MB), C %.2f ms per step (V100, AMP, batch 128), "
            "H = %.2f x C (cifar-train's fitted share), fp16 extra scaled from cifar-train's per byte:" % (
                S_RESNET50 / 1e6, C_RESNET50_MS, share), C_RESNET50_MS, share * C_RESNET50_MS,
            S_RESNET50, f["eta"], f["x16"])
    predict("The same ResNet-50-sized model with nothing hidden (H = 0), the bound if backward cannot cover the "
            "allreduce:", C_RESNET50_MS, 0.0, S_RESNET50, f["eta"], f["x16"])
    t = fits["torch"]
    predict("The same ResNet-50-sized model with a transport that gets %.2f of the link (the peer's gloo at 1 Gbit/s) "
            "and the same H:" % t["eta"], C_RESNET50_MS, share * C_RESNET50_MS, S_RESNET50, t["eta"], f["x16"])


if __name__ == "__main__":
    main()
