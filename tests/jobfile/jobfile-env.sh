# shellcheck shell=bash
# Sourced by the job-file tests (run from the repository root): BUILD with its default, and need_built for
# the programs a test runs. make passes BATCHAI_JOB_MISSING, the libraries batchai-job lacks here (empty
# when none is missing; make config lists them too).
BUILD=${BUILD:-build}

# need_built PROGRAM...: each exists and is executable. Else the test skips (exit 77) naming the missing
# library, or fails when make found them all (the program should have been built).
need_built() {
    local p
    for p in "$@"; do
        [ -x "$p" ] && continue
        if [ -n "${BATCHAI_JOB_MISSING+set}" ] && [ -z "$BATCHAI_JOB_MISSING" ]; then
            echo "FAIL: $p is not built, though make found every library it needs"
            exit 1
        fi
        echo "SKIP(dep): $p is not built (${BATCHAI_JOB_MISSING:+it needs $BATCHAI_JOB_MISSING; }make config says what is missing)"
        exit 77
    done
}
