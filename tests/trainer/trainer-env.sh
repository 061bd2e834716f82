# Sourced by the trainer's shell tests (run from the repository root): BUILD and DATA with their defaults, and
# the skips (exit 77, run-tests' "SKIP(what): why") for what a test needs and this machine may lack.
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}

need_cifar_train() {
    [ -x "$BUILD/bin/cifar-train" ] || { echo "SKIP(dep): cifar-train is not built (make config says what it lacks)"; exit 77; }
}

need_data() {
    [ -f "$DATA/data_batch_1.bin" ] || { echo "SKIP(shared): $DATA not present"; exit 77; }
}

# need_python MODULE...: Debian's /usr/bin/python3 (python3 on PATH may be another build), or PYTHON where the
# caller names one (the GPU kit names the machine's PyTorch python), imports them all.
need_python() {
    "${PYTHON:-/usr/bin/python3}" -c "import $(echo "$*" | tr ' ' ',')" 2>/dev/null ||
        { echo "SKIP(dep): ${PYTHON:-/usr/bin/python3} cannot import all of: $* (python3-<module> packages)"; exit 77; }
}

# sigterm_in_epoch_2 DIR BIN ARGS...: runs BIN ARGS in DIR (output in DIR/log), sends SIGTERM once epoch 2
# has begun, and fails the test unless the run stops with status 3 (stopped, resumable).
sigterm_in_epoch_2() {
    local d=$1 pid rc=0
    shift
    (cd "$d" && exec "$@") >"$d/log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q '^Epoch 2/' "$d/log" 2>/dev/null && break; sleep 0.1; done
    sleep 0.2
    kill -TERM "$pid"
    wait "$pid" || rc=$?
    [ "$rc" = 3 ] || { echo "FAIL: exit status $rc after SIGTERM, expected 3"; cat "$d/log"; exit 1; }
}
