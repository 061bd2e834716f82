#!/usr/bin/python3
"""Independent readers of what cifar-train writes for people to watch, checked against its --log-json:

  watch_check.py --json LOG [--csv FILE] [--tb DIR --tb-files N] [--png FILE] --epochs N

(--tb-files 0: any number of event files but none.) Without --json, the event files' values are compared
with the CSV's (all but lr, which the CSV lacks).

- the CSV (Python's csv module): Keras's CSVLogger header and layout ("\\r\\n" line ends), one row per
  epoch 0..N-1 in order, each number as repr(float) prints it, values equal to the JSON epoch lines';
- the TensorBoard event files in DIR: TFRecord framing with both masked CRC-32Cs checked with
  python3-crc32c, each Event decoded with tb_event.proto compiled by protoc (Debian's protobuf-compiler)
  now, file_version "brain.Event:2" first, the scalars per step (a SessionLog START drops later steps of
  earlier files, as TensorBoard does) equal to the JSON's, steps 0..N-1;
- the PNG: its signature and IHDR.
The JSON log may hold several runs (a resume appends): an epoch's last line is the one that counts."""
import argparse
import csv
import glob
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

import crc32c

HEADER = ["epoch", "acc", "loss", "val_acc", "val_loss", "images_per_sec"]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def close(a, b, rel, abs_tol=0.0):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def json_epochs(path):
    ep = {}
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if d["type"] == "epoch":
                ep[d["epoch"] - 1] = d
    return ep


def check_csv(path, ep, n):
    raw = open(path, "rb").read()
    if not raw.endswith(b"\r\n") or raw.count(b"\r\n") != raw.count(b"\n"):
        fail(f"{path}: lines do not all end with \\r\\n as csv.excel writes them")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if rows[0] != HEADER:
        fail(f"{path}: header {rows[0]}, expected {HEADER}")
    epochs = [int(r[0]) for r in rows[1:]]
    if epochs != list(range(n)):
        fail(f"{path}: epochs {epochs}, expected {list(range(n))}")
    for r in rows[1:]:
        for text in r[1:]:
            if repr(float(text)) != text:
                fail(f"{path}: {text!r} is not written as Python's repr() ({float(text)!r})")
        d = ep.get(int(r[0])) if ep is not None else {}
        if ep is None:
            continue
        if d is None:
            fail(f"{path}: epoch {r[0]} has no JSON epoch line")
            continue
        v = dict(zip(HEADER, r))
        for k in ("acc", "loss", "val_acc", "val_loss"):
            if not close(float(v[k]), d[k], 1e-5):
                fail(f"{path}: epoch {r[0]} {k} {v[k]} but the JSON says {d[k]}")
        if not close(float(v["images_per_sec"]), d["images_per_sec"], 0, 0.051):
            fail(f"{path}: epoch {r[0]} images_per_sec {v['images_per_sec']} but the JSON says {d['images_per_sec']}")
    print(f"csv read: {len(rows) - 1} rows, epochs {epochs}")


def masked(data):
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    b = open(path, "rb").read()
    at = 0
    while at < len(b):
        if len(b) - at < 12:
            fail(f"{path}: {len(b) - at} trailing bytes")
            return
        head = b[at:at + 8]
        (length,) = struct.unpack("<Q", head)
        (hcrc,) = struct.unpack("<I", b[at + 8:at + 12])
        if hcrc != masked(head):
            fail(f"{path}: record at {at}: length CRC {hcrc:#x}, expected {masked(head):#x}")
        if len(b) - at < 16 + length:
            fail(f"{path}: record at {at} cut short ({len(b) - at} of {16 + length} bytes)")
            return
        data = b[at + 12:at + 12 + length]
        (dcrc,) = struct.unpack("<I", b[at + 12 + length:at + 16 + length])
        if dcrc != masked(data):
            fail(f"{path}: record at {at}: data CRC {dcrc:#x}, expected {masked(data):#x}")
        yield data
        at += 16 + length


def event_module():
    out = tempfile.mkdtemp(prefix="tb-proto.")
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(["protoc", f"--proto_path={here}", f"--python_out={out}", "tb_event.proto"], check=True)
    sys.path.insert(0, out)
    import tb_event_pb2
    return tb_event_pb2


def check_tb(d, ep, n, nfiles):
    pb = event_module()
    files = sorted(glob.glob(os.path.join(d, "*")))
    names = [os.path.basename(f) for f in files]
    if len(files) != nfiles if nfiles else not files:
        fail(f"{d}: {len(files)} event files {names}, expected {nfiles}")
    for name in names:
        if not re.fullmatch(r"events\.out\.tfevents\.\d{10}\.[^/]+", name):
            fail(f"{d}/{name}: not named as TensorFlow names event files")
    scalars = {}
    for f in files:
        events = []
        for data in records(f):
            e = pb.Event()
            e.ParseFromString(data)
            events.append(e)
        if not events or events[0].WhichOneof("what") != "file_version" or events[0].file_version != "brain.Event:2":
            fail(f"{f}: the first event is not file_version brain.Event:2")
        if f != files[0] and (len(events) < 2 or events[1].WhichOneof("what") != "session_log" or
                              events[1].session_log.status != pb.SessionLog.START):
            fail(f"{f}: a resumed run's file does not start with SessionLog START")
        for e in events[1:]:
            kind = e.WhichOneof("what")
            if kind == "session_log" and e.session_log.status == pb.SessionLog.START:
                scalars = {s: v for s, v in scalars.items() if s < e.step}
            elif kind == "summary":
                if e.step in scalars:
                    fail(f"{f}: step {e.step} twice")
                scalars[e.step] = {v.tag: v.simple_value for v in e.summary.value}
            else:
                fail(f"{f}: unexpected event {kind}")
            if not (1.5e9 < e.wall_time < 4e9):
                fail(f"{f}: wall_time {e.wall_time}")
    steps = sorted(scalars)
    if steps != list(range(n)):
        fail(f"{d}: steps {steps}, expected {list(range(n))}")
    for s, v in scalars.items():
        d_ = ep.get(s)
        if d_ is None:
            continue
        want = {"loss": d_["loss"], "acc": d_["acc"], "val_loss": d_["val_loss"], "val_acc": d_["val_acc"],
                "images_per_sec": d_["images_per_sec"], "lr": d_.get("lr")}
        if set(v) != set(want):
            fail(f"step {s}: tags {sorted(v)}, expected {sorted(want)}")
            continue
        for k, w in want.items():
            if w is not None and not close(v[k], w, 1e-5, 0.051 if k == "images_per_sec" else 0):
                fail(f"step {s}: {k} {v[k]} in the event file, {w} in the JSON")
    print(f"tensorboard read: {len(files)} files, steps {steps}")


def check_png(path):
    b = open(path, "rb").read()
    if b[:8] != b"\x89PNG\r\n\x1a\n" or b[12:16] != b"IHDR":
        fail(f"{path}: not a PNG")
        return
    w, h = struct.unpack(">II", b[16:24])
    if (w, h) != (960, 400) or len(b) < 2000:
        fail(f"{path}: {w}x{h}, {len(b)} bytes: not the picture expected (960x400)")
    print(f"png read: {w}x{h}, {len(b)} bytes")


ap = argparse.ArgumentParser()
ap.add_argument("--json")
ap.add_argument("--csv")
ap.add_argument("--tb")
ap.add_argument("--tb-files", type=int, default=1)
ap.add_argument("--png")
ap.add_argument("--epochs", type=int, required=True)
a = ap.parse_args()
ep = json_epochs(a.json) if a.json else None
if a.csv:
    check_csv(a.csv, ep, a.epochs)
if ep is None:
    with open(a.csv, newline="") as f:
        ep = {int(r["epoch"]): {k: float(v) for k, v in r.items() if k != "epoch"} for r in csv.DictReader(f)}
if a.tb:
    check_tb(a.tb, ep, a.epochs, a.tb_files)
if a.png:
    check_png(a.png)
sys.exit(1 if failures else 0)
