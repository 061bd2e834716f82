#!/usr/bin/python3
"""bench-scaling.sh's table: reads lines "SIDE CONFIG RANKS {epoch JSON}" (one per round) and prints, per
side and configuration, the medians over the rounds. Efficiency divides the aggregate by N x that side's
1p1t figure; ours also gets per-step compute, wait and progress-thread CPU (ms) from its JSON."""
import json
import statistics
import sys

runs = {}
for line in sys.stdin:
    side, config, ranks, js = line.split(" ", 3)
    runs.setdefault((side, config), (int(ranks), []))[1].append(json.loads(js))


def med(rows, f):
    return statistics.median(f(r) for r in rows)


def efficiency(x, side, which, n):
    """aggregate / (N x single) = per rank / single."""
    return "%5.2f" % (x / single[side][which]) if side in single and n > 1 else "    -"


single = {}
print("%-6s %-9s %5s | %9s %9s %5s | %9s %9s %5s | %8s %8s %8s" % (
    "side", "config", "ranks", "e2e/rank", "e2e agg", "eff", "step/rank", "step agg", "eff",
    "comp ms", "wait ms", "prog ms"))
for (side, config), (n, rows) in runs.items():
    per_rank = med(rows, lambda r: r["images_per_sec"] / n)
    steps_ps = med(rows, lambda r: r["images_per_sec"] * r["seconds"] / n / r["step_seconds"])
    if config == "1p1t":
        single[side] = (per_rank, steps_ps)
    line = "%-6s %-9s %5d | %9.1f %9.1f %s | %9.1f %9.1f %s |" % (
        side, config, n, per_rank, per_rank * n, efficiency(per_rank, side, 0, n), steps_ps, steps_ps * n,
        efficiency(steps_ps, side, 1, n))
    if "wait_seconds" in rows[0]:
        nsteps = rows[0]["steps"]
        line += " %8.2f %8.2f %8.2f" % (
            med(rows, lambda r: 1e3 * (r["step_seconds"] - r["wait_seconds"]) / nsteps),
            med(rows, lambda r: 1e3 * r["wait_seconds"] / nsteps),
            med(rows, lambda r: 1e3 * r["progress_cpu_seconds"] / nsteps))
    else:
        line += " %8s %8s %8s" % ("-", "-", "-")
    print(line)
print("e2e: the timed epoch's images / its wall time; step: images / the summed step times; comp: step time "
      "minus wait; wait: waiting for the gradient allreduces after backward; prog: CPU of libcollective's threads; "
      "all per rank 0, medians over the rounds")
