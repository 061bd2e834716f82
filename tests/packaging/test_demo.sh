#!/usr/bin/env bash
# make demo as a user meets it, twice: contrib/demo/demo start (the build in place, a short training) runs
# the tutorial's job and passes its own check-site; files the demo's user made in its home and share, and a
# job file changed by them, survive a second start, which runs the tutorial's job again; Azure ML's 32
# reference jobs, as shipped, each run or are refused with reasons on the demo's site map; `demo shell` gives
# the user's shell where batchai-job --help, sinfo and man -w batchai-job work; `demo stop` names what it
# removes, the user's files among it, and removes it.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOP=$(pwd -P)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
NAME=test_demo
. tests/lib/assert.bash
[ "$(id -u)" -eq 0 ] || { echo "SKIP(root): the demo starts munged, slurmctld and slurmd"; exit 77; }
for p in munged slurmctld slurmd man; do
    command -v "$p" >/dev/null || { echo "SKIP(dep): $p is not installed"; exit 77; }
done
for f in bin/batchai-job bin/cifar-train lib/spank_batchai.so; do
    [ -e "$BUILD/$f" ] || { echo "SKIP(dep): $BUILD/$f is not built"; exit 77; }
done
DATA=${CIFAR10_DIR:-$TOP/../shared/data/cifar-10-batches-bin-subset}
[ -f "$DATA/test_batch.bin" ] || { echo "SKIP(shared): no CIFAR-10 data at $DATA (set CIFAR10_DIR)"; exit 77; }

install -d -m 0755 /var/lib/batchai-test
DIR=$(mktemp -d /var/lib/batchai-test/demo.XXXXXX)
OUT=$(mktemp)
export DEMO_DIR=$DIR DEMO_BUILD=0 CIFAR10_DIR=$DATA DEMO_ARGS="--epochs 1 --limit-train 128 --limit-test 64 --threads 1"
DEMO=$TOP/contrib/demo/demo
cleanup() {
    local rc=$?
    [ $rc -eq 0 ] || { echo "---- the demo's output"; cat "$OUT"; } >&2
    "$DEMO" stop >/dev/null 2>&1 || true
    rm -rf "$DIR" "$OUT"
    exit $rc
}
trap cleanup EXIT
# Bounded: the demo's own waits end (120 s queued, then its job's end), and so does this.
demo() { timeout 300 "$DEMO" "$@" >"$OUT" 2>&1 || fail "demo $* exited $?: $(tail -n 30 "$OUT")"; }
as_demo_user() { runuser -u batchai-demo -- /bin/sh -c "$*"; }

demo start
grep -qx "check-site: all checks passed" "$OUT" || fail "the first start's check-site did not pass: $(grep -E '^(node .*: )?FAIL' "$OUT")"
grep -qx "executionState:   succeeded" "$OUT" || fail "the first start's tutorial job did not succeed"
first_logs=$(sed -n 's/^logs: *//p' "$OUT")
[ -f "$first_logs/stdout.txt" ] || fail "the first job's logs are not at '$first_logs'"

# What the user made: a file in the home, a checkpoint in the share, and an edit of the tutorial's job file.
as_demo_user "echo mine >'$DIR/home/notes.txt' && mkdir -p '$DIR/shares/myshare/mine' &&
    echo ckpt >'$DIR/shares/myshare/mine/model.ckpt' && echo ' ' >>'$DIR/home/cifar.json'"
edited=$(md5sum <"$DIR/home/cifar.json")

demo start
grep -qx "check-site: all checks passed" "$OUT" || fail "the second start's check-site did not pass"
grep -qx "executionState:   succeeded" "$OUT" || fail "the second start's tutorial job did not succeed"
grep -q "a previous demo is in\|stopping it first\|removed it" "$OUT" && fail "the second start removed the previous demo"
grep -qF "$DIR/home/cifar.json is yours now" "$OUT" || fail "the second start does not say it kept the changed cifar.json"
[ "$(cat "$DIR/home/notes.txt" 2>&1)" = mine ] || fail "the second start lost \$HOME/notes.txt"
[ "$(cat "$DIR/shares/myshare/mine/model.ckpt" 2>&1)" = ckpt ] || fail "the second start lost the share's mine/model.ckpt"
[ "$(md5sum <"$DIR/home/cifar.json")" = "$edited" ] || fail "the second start overwrote the user's cifar.json"
[ -f "$first_logs/stdout.txt" ] || fail "the second start lost the first job's logs ($first_logs)"

# Azure ML's 32 reference jobs as shipped, copied into the user's home and submitted there on the demo's site
# map: each runs to COMPLETED or is refused at submission with its reasons, each a "batchai: FILE: FIELD: ..."
# line. Which run is the map's doing: the six basic jobs that bring neither code nor data.
REF=$TOP/../shared/reference/azureml/jobs
[ "$(find "$REF" -maxdepth 1 -type f | wc -l)" = 32 ] || fail "$REF does not hold the 32 reference jobs"
# Copied by root: the user may not reach ../shared (a checkout in /root, whose mode is 0700).
install -d -o batchai-demo -g batchai-demo "$DIR/home/azureml"
install -m 0644 -o batchai-demo -g batchai-demo "$REF"/* "$DIR/home/azureml/"
# shellcheck disable=SC2016 # expanded by the demo user's shell
demo shell 'cd azureml && for f in *; do if out=$(sbatch --parsable --batchai-job="$f" 2>&1 </dev/null); then
    echo "RUN $f ${out%%;*}"; else echo "REFUSED $f"; printf "%s\n" "$out" | sed "s/^/  /"; fi; done'
runs=$(awk '$1 == "RUN" {print $2}' "$OUT" | tr '\n' ' ')
[ "$runs" = "basics__hello-world-env-var.yml basics__hello-world-input.yml basics__hello-world-org.yml \
basics__hello-world-output-data.yml basics__hello-world-output.yml basics__hello-world.yml " ] ||
    fail "the reference jobs that run on the demo: $runs"
refused=$(grep -c '^REFUSED ' "$OUT")
[ "$refused" = 26 ] || fail "$refused reference jobs refused, not 26"
# Every refusal gives a reason naming a field of the file.
for f in $(awk '$1 == "REFUSED" {print $2}' "$OUT"); do
    awk -v f="$f" '$1 == "REFUSED" {on = ($2 == f); next} on' "$OUT" | grep -qE "batchai: $DIR/home/azureml/$f: [a-z_.]+[a-z_]: " ||
        fail "$f was refused without a reason naming a field: $(grep -A3 "^REFUSED $f" "$OUT")"
done
for id in $(awk '$1 == "RUN" {print $3}' "$OUT"); do
    for ((i = 0; i < 600; i++)); do
        st=$(SLURM_CONF=$DIR/slurm.conf scontrol -o show job "$id" | sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p')
        case $st in PENDING | CONFIGURING | RUNNING | COMPLETING) sleep 0.1 ;; *) break ;; esac
    done
    [ "$st" = COMPLETED ] || fail "reference job $id ended $st (or did not end within 60 s): $(grep " $id$" "$OUT")"
done
[ "$(cat "$DIR"/home/azureml/basics__hello-world-output/*/outputs/helloworld.txt)" = "hello world" ] ||
    fail "hello-world-output wrote no ./outputs/helloworld.txt"
echo "reference jobs on the demo: 6 run, 26 refused with their reasons"

# The user's shell: the demo's commands, Slurm and manual pages.
demo shell 'batchai-job --help && sinfo -h -o "%P %D %t" && man -w batchai-job && id -un && pwd'
grep -q "^Usage: batchai-job " "$OUT" || fail "demo shell: batchai-job --help did not work"
grep -qE "^debug\* 2 (idle|mix)" "$OUT" || fail "demo shell: sinfo does not show the demo's 2 nodes"
grep -qx "$DIR/share/man/man1/batchai-job.1" "$OUT" || fail "demo shell: man -w batchai-job does not find the page"
grep -qx "batchai-demo" "$OUT" && grep -qx "$DIR/home" "$OUT" || fail "demo shell: not batchai-demo in its home"

# stop names what it removes before removing it.
demo stop
grep -qE "^  $DIR/home: [0-9]+ files" "$OUT" || fail "demo stop does not say it removes the home's files"
grep -qx "      $DIR/home/notes.txt" "$OUT" || fail "demo stop does not name the user's notes.txt"
grep -qE "^  $DIR/shares: [0-9]+ files" "$OUT" || fail "demo stop does not say it removes the shares' files"
[ ! -e "$DIR" ] || fail "demo stop left $DIR"
echo "PASS: $NAME: two starts keep the user's files and pass check-site; 6 reference jobs run, 26 refused with reasons; demo shell has batchai-job, sinfo and man; stop names what it removes"
