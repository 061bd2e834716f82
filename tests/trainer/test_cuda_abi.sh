#!/bin/bash
# The CUDA table's library is found through its one getter, whose ABI number must be cifar-train's:
# stand-ins of another build (tests/trainer/cuda_abi_stub.c: a getter with the next ABI number; no getter)
# loaded through CIFAR_TRAIN_CUDA_LIBRARY make `--device cuda` exit 5 (a GPU asked for and not usable) with a message naming both numbers
# (or the missing getter), and `--version` report it; nothing is called in them. The real library of this
# build passes the check (where it is built): its refusal, if any, is CUDA's, not the ABI's. A --device cpu
# run loads no CUDA library at all.
set -eu
. tests/trainer/trainer-env.sh
need_cifar_train
need_data
work=$(mktemp -d "${TMPDIR:-/tmp}/trainer-abi.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$BUILD/bin/cifar-train
run=(--device cuda --data "$DATA" --limit-train 32 --limit-test 32 --epochs 1 --dir "$work")

# expect_refusal STUB TEXT: refused, with "STUB TEXT" (the library's path, then why) in the message
expect_refusal() {
    rc=0
    CIFAR_TRAIN_CUDA_LIBRARY=$1 "$bin" "${run[@]}" >"$work/out" 2>"$work/err" || rc=$?
    [ $rc -eq 5 ] && grep -qF -- "$1 $2" "$work/err" ||
        { echo "FAIL: $1: exit $rc, expected 5 and '$2' on stderr:"; cat "$work/err"; exit 1; }
    CIFAR_TRAIN_CUDA_LIBRARY=$1 "$bin" --version | grep -qF -- "$1 $2" ||
        { echo "FAIL: $1: --version does not say '$2'"; CIFAR_TRAIN_CUDA_LIBRARY=$1 "$bin" --version; exit 1; }
    [ ! -e "$work/saved_models" ] || { echo "FAIL: $1: a model was written"; exit 1; }
    echo "ok: $(basename "$1"): $(cat "$work/err")"
}

abi=$(sed -n 's/^#define CUDA_PLUGIN_ABI \([0-9]*\)$/\1/p' trainer/src/cuda/cuda_plugin.h)
expect_refusal "$BUILD/tests/trainer/cuda_abi_other.so" "has CUDA table ABI $((abi + 1)), this cifar-train needs ABI $abi"
expect_refusal "$BUILD/tests/trainer/cuda_abi_none.so" "has no cifar_train_cuda_plugin()"

if [ -f "$BUILD/lib/libcifar_train_cuda.so" ]; then
    v=$(CIFAR_TRAIN_CUDA_LIBRARY=$BUILD/lib/libcifar_train_cuda.so "$bin" --version 2>&1 | grep '^cuda:')
    case $v in
    *ABI* | *cifar_train_cuda_plugin*) echo "FAIL: this build's own library is refused: $v"; exit 1 ;;
    esac
    echo "ok: this build's libcifar_train_cuda.so passes the ABI check ($v)"
fi

# A CPU run never loads the CUDA library (nor CUDA's own behind it): not to pick its device, and not at its
# exit to close a device it never opened. The dynamic loader's own record (LD_DEBUG) says what was loaded.
rc=0
CIFAR_TRAIN_CUDA_LIBRARY=$BUILD/tests/trainer/cuda_abi_other.so LD_DEBUG=files LD_DEBUG_OUTPUT=$work/ld \
    "$bin" --device cpu --data "$DATA" --limit-train 32 --limit-test 32 --epochs 1 --dir "$work/cpu" \
    --checkpoint-dir "$work/cpu" >"$work/out" 2>&1 || rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the CPU run exited $rc:"; tail -n 5 "$work/out"; exit 1; }
grep -qs 'file=libc.so' "$work"/ld.* || { echo "FAIL: LD_DEBUG recorded nothing: cannot tell what was loaded"; exit 1; }
! grep -qs 'cuda_abi_other' "$work"/ld.* || { echo "FAIL: a --device cpu run loaded the CUDA library:"; grep -h 'cuda_abi_other' "$work"/ld.* | head -n 3; exit 1; }
echo "ok: a --device cpu run loaded no CUDA library"
