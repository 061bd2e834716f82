#!/usr/bin/env bash
# libcollective's float16 conversion (half.c, COLL_COMPRESS=fp16) against numpy's float16, both of its
# paths (F16C eight at a time, the compiler's _Float16 one at a time): round to nearest even at every
# exponent, subnormals, overflow to infinity, infinities, NaNs (test_half.c, half_check.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
[ -x "$BUILD/tests/collective/test_half" ] || { echo "SKIP(dep): test_half is not built (needs Open MPI's headers)"; exit 77; }
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "SKIP(dep): /usr/bin/python3 has no numpy"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$BUILD/tests/collective/test_half" "$dir"
/usr/bin/python3 tests/collective/half_check.py "$dir"
echo "PASS: test_half"
