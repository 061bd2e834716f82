#!/bin/sh
# One full training step of the trainer against the numpy reference in test_step.py (1e-4 relative).
set -e
BUILD=${BUILD:-build}
[ -x "$BUILD/tests/trainer/step_dump" ] || { echo "SKIP(dep): the trainer is not built (make config says what it lacks)"; exit 77; }
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "SKIP(dep): Debian's python3-numpy is not installed"; exit 77; }
dump=$(mktemp "${TMPDIR:-/tmp}/step-dump.XXXXXX")
trap 'rm -f "$dump"' EXIT
"$BUILD/tests/trainer/step_dump" "$dump"
/usr/bin/python3 tests/trainer/test_step.py "$dump"
