# trainer-bench.sh's tables from its log: the median over the rounds of each figure of ours
# (build/bin/trainer-bench) and the peer (trainer/bench/torch_peer.py), ratios of those medians, shares of the
# FP32 peak that build/bin/flops-probe measured. Input lines:
#   peak fp32 threads=T: G GFLOP/s (...)
#   ours mflop per image: train X inference Y (...)
#   SIDE train|inference threads=T batch=B: N img/s (...[, C CPU ms per step])   SIDE is ours or torch
#   SIDE rss threads=T batch=B: M MiB ...
#   SIDE layer threads=T batch=B: NAME FWD_MS BWD_MS MFLOP        (per step; "-" where nothing applies)
function threads(field) { sub("threads=", "", field); sub(":", "", field); return field }
function add(key, x) { vals[key] = vals[key] " " x }
function median(key,   s, a, n, i, j, t) {
    s = vals[key]
    n = split(s, a, " ")
    if (n == 0)
        return ""
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function num(x, fmt) { return x == "" ? "-" : sprintf(fmt, x) }
function ratio(a, b) { return a == "" || b == "" || b == 0 ? "-" : sprintf("%.2f", a / b) }
# The share of threads t's peak that `mflop` per image at `ips` images/s is, in percent.
function share(mflop, ips, t) { return mflop == "" || ips == "" || peak[t] == "" ? "-" : sprintf("%.0f%%", mflop * ips / 10 / peak[t]) }
/^peak fp32 threads=/ { peak[threads($3)] = $4 }
/^ours mflop per image:/ { mflop["train"] = $6; mflop["inference"] = $8 }
/^(ours|torch) (train|inference|rss) +threads=/ { t = threads($3); add($1 " " $2 " " t, $5) }
/^(ours|torch) train +threads=.* CPU ms per step/ { t = threads($3); add($1 " cpu " t, $12) }
/^(ours|torch) layer threads=/ {
    t = threads($3); batch = $4; sub("batch=", "", batch); sub(":", "", batch)
    if (!(($5) in seen)) { seen[$5] = 1; names[++nnames] = $5 }
    add($1 " fwd " t " " $5, $6)
    if ($7 != "-") add($1 " bwd " t " " $5, $7)
    if ($8 != "-" && $8 > 0) layer_mflop[$5] = $8
}
END {
    printf "\nmedians of %d rounds, batch 32 | ours 1 thr | torch 1 thr | ratio | ours 2 thr | torch 2 thr | ratio\n", rounds
    print "(ratio: ours / torch; for RSS and CPU time below 1 means ours uses less)"
    for (k = 1; k <= 6; k++) {
        what = k <= 2 ? (k == 1 ? "train" : "inference") : k <= 4 ? (k == 3 ? "train" : "inference") : k == 5 ? "rss" : "cpu"
        label = k <= 2 ? what " img/s" : k <= 4 ? what " % of FP32 peak" : k == 5 ? "peak RSS MiB" : "train CPU ms per step"
        line = sprintf("%-31s", label)
        for (t = 1; t <= 2; t++) {
            o = median("ours " what " " t); p = median("torch " what " " t)
            if (k <= 2 || k >= 5)
                line = line sprintf(" | %10s | %11s | %5s", num(o, "%.1f"), num(p, "%.1f"), ratio(o, p))
            else
                line = line sprintf(" | %10s | %11s | %5s", share(mflop[what], o, t), share(mflop[what], p, t), "")
        }
        print line
    }
    printf "FP32 peak (flops-probe): %s GFLOP/s at 1 thread, %s at 2; model: %s MFLOP per trained image, %s per inferred\n",
           num(peak[1], "%.1f"), num(peak[2], "%.1f"), mflop["train"], mflop["inference"]
    o1 = median("ours train 1"); o2 = median("ours train 2"); p1 = median("torch train 1"); p2 = median("torch train 2")
    if (o1 != "" && o2 != "" && p1 != "" && p2 != "")
        printf "scaling 1 -> 2 threads, train: ours %.2fx, torch %.2fx\n", o2 / o1, p2 / p1
    if (!nnames)
        exit
    for (t = 1; t <= 2; t++) {
        if (median("ours fwd " t " " names[1]) == "" && median("torch fwd " t " " names[1]) == "")
            continue
        printf "\nper layer, training, %d thread%s: ms per batch-%s step (medians), img/s = batch / (fwd + bwd), %% of the %d-thread peak; ratio: ours speed / torch's\n",
               t, (t > 1 ? "s" : ""), batch, t
        printf "%-16s %9s | %7s %7s %9s %6s | %7s %7s %9s %6s | %5s\n", "layer", "MFLOP/img", "ours fwd", "bwd", "img/s",
               "%peak", "torch fwd", "bwd", "img/s", "%peak", "ratio"
        for (s = 1; s <= 2; s++) total[s] = ""
        for (i = 1; i <= nnames; i++) {
            n = names[i]
            line = sprintf("%-16s %9s", n, n in layer_mflop ? layer_mflop[n] : "-")
            for (s = 1; s <= 2; s++) {
                side = s == 1 ? "ours" : "torch"
                f = median(side " fwd " t " " n); b = median(side " bwd " t " " n)
                ms[s] = f == "" ? "" : f + b
                if (ms[s] != "") total[s] += ms[s]
                ips = ms[s] > 0 ? batch * 1000 / ms[s] : ""
                line = line sprintf(" | %7s %7s %9s %6s", num(f, "%.3f"), num(b, "%.3f"), num(ips, "%.0f"),
                                    n in layer_mflop && layer_mflop[n] > 0 ? share(layer_mflop[n], ips, t) : "-")
            }
            print line sprintf(" | %5s", ms[1] > 0 && ms[2] != "" ? ratio(ms[2], ms[1]) : "-")
        }
        line = sprintf("%-16s %9s", "total (sum)", mflop["train"])
        for (s = 1; s <= 2; s++) {
            ips = total[s] > 0 ? batch * 1000 / total[s] : ""
            line = line sprintf(" | %15s %9s %6s", num(total[s], "%.3f"), num(ips, "%.0f"), share(mflop["train"], ips, t))
        }
        print line sprintf(" | %5s", total[1] > 0 && total[2] != "" ? ratio(total[2], total[1]) : "-")
    }
}
