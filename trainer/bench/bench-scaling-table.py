#!/usr/bin/python3
"""bench-scaling.sh's table: reads lines "SIDE CONFIG RANKS {epoch JSON}" (one per round) and prints, per
side and configuration, the medians over the rounds. Efficiency divides the aggregate by N x that side's
1p1t figure; per-step compute, wait and (ours) progress-thread CPU (ms) come from the JSON. Lines whose
JSON is {"type": "allreduce", "ms": ...} give that side's allreduce of the gradients alone on the
configuration's link; with it, "hidden" is the share of that allreduce that the step did not wait for
(1 - wait / allreduce alone, clipped to 0..1)."""
import json
import statistics
import sys

runs, alone = {}, {}
for line in sys.stdin:
    side, config, ranks, js = line.split(" ", 3)
    row = json.loads(js)
    if row.get("type") == "allreduce":
        alone.setdefault((side, config), []).append(row["ms"])
    else:
        runs.setdefault((side, config), (int(ranks), []))[1].append(row)


def med(rows, f):
    return statistics.median(f(r) for r in rows)


def efficiency(x, side, which, n):
    """aggregate / (N x single) = per rank / single."""
    return "%5.2f" % (x / single[side][which]) if side in single and n > 1 else "    -"


single = {}
print("%-6s %-9s %5s | %9s %9s %5s | %9s %9s %5s | %8s %8s %8s | %8s %6s" % (
    "side", "config", "ranks", "e2e/rank", "e2e agg", "eff", "step/rank", "step agg", "eff",
    "comp ms", "wait ms", "prog ms", "ar ms", "hidden"))
for (side, config), (n, rows) in runs.items():
    per_rank = med(rows, lambda r: r["images_per_sec"] / n)
    steps_ps = med(rows, lambda r: r["images_per_sec"] * r["seconds"] / n / r["step_seconds"])
    if config == "1p1t":
        single[side] = (per_rank, steps_ps)
    line = "%-6s %-9s %5d | %9.1f %9.1f %s | %9.1f %9.1f %s |" % (
        side, config, n, per_rank, per_rank * n, efficiency(per_rank, side, 0, n), steps_ps, steps_ps * n,
        efficiency(steps_ps, side, 1, n))
    wait = None
    if "wait_seconds" in rows[0]:
        nsteps = rows[0]["steps"]
        wait = med(rows, lambda r: 1e3 * r["wait_seconds"] / nsteps)
        line += " %8.2f %8.2f" % (med(rows, lambda r: 1e3 * (r["step_seconds"] - r["wait_seconds"]) / nsteps), wait)
        line += " %8.2f" % med(rows, lambda r: 1e3 * r["progress_cpu_seconds"] / nsteps) \
            if "progress_cpu_seconds" in rows[0] else " %8s" % "-"
    else:
        line += " %8s %8s %8s" % ("-", "-", "-")
    if (side, config) in alone and wait is not None:
        ar = statistics.median(alone[(side, config)])
        line += " | %8.2f %6.2f" % (ar, min(1.0, max(0.0, 1 - wait / ar)))
    else:
        line += " | %8s %6s" % ("-", "-")
    print(line)
print("e2e: the timed epoch's images / its wall time; step: images / the summed step times; comp: step time "
      "minus wait; wait: waiting for the gradient allreduces after backward; prog: CPU of libcollective's threads; "
      "all per rank 0, medians over the rounds; ar: the gradients' allreduce alone on the link (ours: coll-bench in "
      "place, torch: gloo all_reduce; best of 3 means of 20); hidden: 1 - wait / ar")
