#!/bin/sh
# The random components of a run (augmentation draws, dropout masks, sample order, initial weights), drawn by
# the trainer's code, against Keras's definitions: statistics in tests/trainer/test_random.py.
# run-tests: parallel
set -e
BUILD=${BUILD:-build}
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "SKIP: Debian's python3-numpy is not installed"; exit 77; }
dump=$(mktemp "${TMPDIR:-/tmp}/random-dump.XXXXXX")
trap 'rm -f "$dump"' EXIT
"$BUILD/tests/trainer/random_dump" "$dump"
/usr/bin/python3 tests/trainer/test_random.py "$dump"
