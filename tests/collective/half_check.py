"""Checks test_half's conversions against numpy's float16 (round to nearest even, subnormals, infinities;
a NaN must stay a NaN, its payload is not compared). Usage: half_check.py DIR."""
import sys

import numpy as np

d = sys.argv[1]
f32 = np.fromfile(f"{d}/f32.bin", dtype=np.uint32).view(np.float32)
with np.errstate(over="ignore", invalid="ignore"):
    want = f32.astype(np.float16)
bad = 0
for name in ("f16_vec", "f16_one"):
    got = np.fromfile(f"{d}/{name}.bin", dtype=np.uint16).view(np.float16)
    nan = np.isnan(want)
    wrong = (nan != np.isnan(got)) | (~nan & (want.view(np.uint16) != got.view(np.uint16)))
    kinds = {
        "subnormal results": np.count_nonzero(~nan & (np.abs(want) < np.float16(6.104e-05)) & (want != 0)),
        "ties": np.count_nonzero((f32.view(np.uint32) & 0x1FFF) == 0x1000),
        "infinities": np.count_nonzero(np.isinf(want)),
        "NaNs": np.count_nonzero(nan),
    }
    print(f"{name}: {len(f32)} values ({', '.join(f'{v} {k}' for k, v in kinds.items())}), "
          f"{np.count_nonzero(wrong)} differ from numpy")
    for i in np.flatnonzero(wrong)[:10]:
        print(f"  {f32.view(np.uint32)[i]:#010x}: got {got.view(np.uint16)[i]:#06x}, numpy {want.view(np.uint16)[i]:#06x}")
    bad += np.count_nonzero(wrong)
every16 = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
want32 = every16.astype(np.float32)
for name in ("back_vec", "back_one"):
    got = np.fromfile(f"{d}/{name}.bin", dtype=np.float32)
    nan = np.isnan(want32)
    wrong = (nan != np.isnan(got)) | (~nan & (want32.view(np.uint32) != got.view(np.uint32)))
    print(f"{name}: 65536 float16 values to float32, {np.count_nonzero(wrong)} differ from numpy")
    bad += np.count_nonzero(wrong)
sys.exit(1 if bad else 0)
