#!/usr/bin/python3
"""Checks a libcollective timeline (COLL_TIMELINE) with Python's own json module, independently of the C
writer: the file is one JSON document; every collective of every rank has its five moments in order
(queued <= ready <= fused <= reduced <= done) and its four phases nested inside it, one after the other;
collectives in one lane never overlap; each of test_timeline's 12 tensors appears once per step on every
rank. Exit 0 or a message naming what is wrong.

timeline_check.py FILE --ranks N [--steps N | --min-steps N] [--marker REGEX] [--cap BYTES]"""
import argparse
import json
import os
import re
import sys

SIZES = [864, 32, 9216, 32, 18432, 64, 36864, 64, 1179648, 512, 5120, 10]  # test_timeline.c
MOMENTS = ["queued", "ready", "fused", "reduced", "done"]
PHASES = ["negotiate", "wait", "reduce", "finish"]
EPS = 0.0015  # us: ts and dur are written to the nanosecond


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--steps", type=int, help="exactly these steps, all complete, on every rank")
    ap.add_argument("--min-steps", type=int, default=1, help="at least these complete steps on every rank")
    ap.add_argument("--marker", help="an instant event whose name matches this must be there")
    ap.add_argument("--last-marker", action="store_true", help="... and be the last event")
    ap.add_argument("--cap", type=int, help="the file may be at most this many bytes")
    a = ap.parse_args()

    size = os.path.getsize(a.file)
    with open(a.file, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            fail(f"{a.file} ({size} bytes) is not valid JSON: {e}")
    if a.cap is not None and size > a.cap:
        fail(f"{a.file} is {size} bytes, over the cap of {a.cap}")
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        fail("no traceEvents array")

    colls = {}  # (pid, seq) -> event
    phases = {}  # (pid, seq) -> [events]
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "collective":
            key = (e["pid"], e["args"]["seq"])
            if key in colls:
                fail(f"collective #{key[1]} appears twice on rank {key[0]}")
            colls[key] = e
        elif e.get("ph") == "X" and e.get("cat") == "phase":
            phases.setdefault((e["pid"], e["args"]["seq"]), []).append(e)
    if not colls:
        fail("no collective in the timeline")
    pids = sorted({p for p, _ in colls})
    if pids != list(range(a.ranks)):
        fail(f"collectives of ranks {pids}, expected ranks 0..{a.ranks - 1}")

    for (pid, seq), e in colls.items():
        t = [float(e["args"][m]) for m in MOMENTS]
        if any(t[i] > t[i + 1] + EPS for i in range(4)):
            fail(f"rank {pid} collective #{seq}: moments out of order: {dict(zip(MOMENTS, t))}")
        if abs(e["ts"] - t[0]) > EPS or abs(e["ts"] + e["dur"] - t[4]) > EPS:
            fail(f"rank {pid} collective #{seq}: ts/dur {e['ts']}/{e['dur']} do not span queued..done {t}")
        ph = sorted(phases.get((pid, seq), []), key=lambda x: PHASES.index(x["name"]) if x["name"] in PHASES else 9)
        if [x["name"] for x in ph] != PHASES:
            fail(f"rank {pid} collective #{seq}: phases {[x['name'] for x in ph]}, expected {PHASES}")
        for i, x in enumerate(ph):
            if x["tid"] != e["tid"]:
                fail(f"rank {pid} collective #{seq}: phase {x['name']} in lane {x['tid']}, not {e['tid']}")
            if abs(x["ts"] - t[i]) > EPS or abs(x["ts"] + x["dur"] - t[i + 1]) > EPS:
                fail(f"rank {pid} collective #{seq}: phase {x['name']} {x['ts']}+{x['dur']} is not "
                     f"{MOMENTS[i]}..{MOMENTS[i + 1]} ({t[i]}..{t[i + 1]})")
            if x["dur"] < 0:
                fail(f"rank {pid} collective #{seq}: phase {x['name']} has a negative duration")
    if set(phases) - set(colls):
        fail(f"phases without their collective: {sorted(set(phases) - set(colls))[:5]}")

    lanes = {}
    for (pid, seq), e in colls.items():
        lanes.setdefault((pid, e["tid"]), []).append(e)
    for (pid, tid), es in lanes.items():
        es.sort(key=lambda x: x["ts"])
        for x, y in zip(es, es[1:]):
            if x["ts"] + x["dur"] > y["ts"] + EPS:
                fail(f"rank {pid} lane {tid}: #{x['args']['seq']} and #{y['args']['seq']} overlap")

    # Once per step: test_timeline queues a step's 12 tensors last first, so collective k is tensor
    # 11 - k % 12 of step k // 12 (the finalize barrier after the last step is not a tensor).
    n = len(SIZES)
    for pid in pids:
        steps = {}
        for (p, seq), e in colls.items():
            if p != pid or not e["name"].startswith("allreduce"):
                continue
            want = f"allreduce average of {SIZES[n - 1 - seq % n]} x float32 in host memory"
            if e["name"] != want:
                fail(f"rank {pid} collective #{seq} is '{e['name']}', expected '{want}'")
            steps.setdefault(seq // n, set()).add(seq % n)
        last = max(steps)
        complete = [s for s in range(last + 1) if steps.get(s) == set(range(n))]
        if a.steps is not None and (len(complete) != a.steps or last != a.steps - 1):
            fail(f"rank {pid}: {len(complete)} complete steps up to step {last}, expected {a.steps}")
        gaps = [s for s in range(last) if s not in complete]  # only the last step may be cut short
        if gaps:
            fail(f"rank {pid}: steps {gaps[:5]} lack tensors {sorted(set(range(n)) - steps.get(gaps[0], set()))}")
        if len(complete) < a.min_steps:
            fail(f"rank {pid}: {len(complete)} complete steps, expected at least {a.min_steps}")
        print(f"rank {pid}: {len(complete)} complete steps of {n} tensors, each once")

    markers = [e for e in events if e.get("ph") == "i"]
    for m in markers:
        print(f"marker: {m['name']}")
    if a.marker:
        hit = [i for i, e in enumerate(events) if e.get("ph") == "i" and re.search(a.marker, e["name"])]
        if not hit:
            fail(f"no marker event matching '{a.marker}'")
        if a.last_marker and hit[-1] != len(events) - 1:
            fail(f"the marker is event {hit[-1]} of {len(events)}, not the last")
    elif markers:
        fail(f"unexpected marker events: {[m['name'] for m in markers]}")
    print(f"{a.file}: valid JSON, {size} bytes, {len(colls)} collectives of {a.ranks} ranks")


main()
