#!/bin/bash
# The GPU kit (docs/gpu-kit.md) on a machine that has nothing of the project's: gpukit/make-kit builds a kit
# from this build, its archive is unpacked inside a root that holds glibc, bash, dash, coreutils, grep, sed,
# awk, find, tar and xz (each with the libraries it loads), and the CUDA runtime and cuBLAS of the toolkit
# (which a GPU machine has), and nothing else: no HDF5, cJSON, oneDNN, OpenBLAS, Open MPI, Slurm, Python, NCCL
# or cuDNN. run-gpu-checks runs there (no GPU: no /dev/nvidia*), and
#   - exits 77 with `no GPU: nothing measured` as its summary's last line;
#   - every part ends `pass` or `skip`, and the parts with a CPU side reached it (test_cuda_train.sh's clean
#     "no CUDA device", host-memory liveness, a CPU epoch per seed evaluated, coll-bench on host memory);
#   - the libs part found every library, each inside the kit, glibc's or the toolkit's;
#   - no log shows a missing library or file or an unbound variable;
#   - the archive is at most 40 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
DATA=${DATA:-../shared/data/cifar-10-batches-bin-subset}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
[ "$(id -u)" -eq 0 ] || { echo "SKIP(root): a clean root needs chroot and mounts"; exit 77; }
unshare --mount --propagation private true 2>/dev/null ||
    { echo "SKIP(root): root here cannot make a mount namespace (unshare --mount), which the clean root needs"; exit 77; }
[ -f "$DATA/data_batch_1.bin" ] || { echo "SKIP(shared): $DATA not present"; exit 77; }
for f in bin/cifar-train bin/conv-cudnn-bench lib/libcifar_train_cuda.so lib/libcollective_nccl.so \
         tests/trainer/cuda_check tests/collective/test_faults; do
    [ -e "$BUILD/$f" ] || { echo "SKIP(dep): $BUILD/$f is not built (the kit needs nvcc, cuBLAS, NCCL, cuDNN, Open MPI)"; exit 77; }
done
for f in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
    [ -f "$CUDA_HOME/lib64/$f" ] || { echo "SKIP(dep): no $CUDA_HOME/lib64/$f to stand for a GPU machine's toolkit"; exit 77; }
done

work=$(mktemp -d /tmp/gpukit-root.XXXXXX)
root=$work/root
cleanup() {
    # The mounts live in the test's own mount namespace (unshare below): they end with it.
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT

echo "== make-kit"
gpukit/make-kit "$BUILD" "$DATA" "$work/gpu-kit"
size=$(stat -c %s "$work/gpu-kit.tar.xz")
echo "the archive: $size bytes"
[ "$size" -le $((40 * 1048576)) ] || { echo "FAIL: the kit's archive is $size bytes, over 40 MiB"; exit 1; }

# The root: each tool and the libraries it loads (ldd), and all of libc6's files.
mkdir -p "$root"/{usr/bin,usr/lib,usr/lib64,etc,tmp,proc,sys,dev/shm,opt,out,root,"$CUDA_HOME"/lib64}
chmod 1777 "$root/tmp"
# Debian's merged /usr: /bin, /lib and /lib64 are links into /usr, in the root too.
for d in bin lib lib64; do
    if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$root/$d"; else mkdir -p "$root/$d"; fi
done
put() { [ -e "$root$1" ] || { mkdir -p "$root$(dirname "$1")"; cp -L "$1" "$root$1"; }; }
dpkg -L libc6 | while read -r f; do [ -f "$f" ] && put "$f"; done
tools="bash dash sh env $(dpkg -L coreutils | grep -E '^/(usr/)?bin/' | xargs -n1 basename) grep sed awk mawk find xargs tar xz"
for t in $tools; do
    p=$(type -P "$t") || { echo "FAIL: this machine has no $t to put in the root"; exit 1; }
    for f in "$p" $(readlink -f "$p") $(ldd "$(readlink -f "$p")" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
        put "$f"
    done
done
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
cp "$work/gpu-kit.tar.xz" "$root/gpu-kit.tar.xz"
# What must not be in the root: the project's Debian packages.
if find "$root" \( -name 'libhdf5*' -o -name 'libcjson*' -o -name 'libdnnl*' -o -name 'libopenblas*' -o -name 'libmpi*' \
        -o -name 'libslurm*' -o -name 'python3*' -o -name 'libnccl*' -o -name 'libcudnn*' \) -print | grep .; then
    echo "FAIL: the clean root holds a library of the project's dependencies"; exit 1
fi

echo "== run-gpu-checks in the clean root"
rc=0
CUDA_HOME=$CUDA_HOME unshare --mount --propagation private bash -c '
    set -e
    root=$1
    for f in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
        real=$(readlink -f "$CUDA_HOME/lib64/$f")
        touch "$root$CUDA_HOME/lib64/$f"
        mount --bind -o ro "$real" "$root$CUDA_HOME/lib64/$f"
    done
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount -t tmpfs -o size=256m tmpfs "$root/dev/shm"
    for d in null zero random urandom; do touch "$root/dev/$d"; mount --bind "/dev/$d" "$root/dev/$d"; done
    ln -s /proc/self/fd "$root/dev/fd"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root CUDA_HOME="$CUDA_HOME" /bin/bash -c "
        set -e
        cd /opt && tar -xJf /gpu-kit.tar.xz
        /opt/gpu-kit/run-gpu-checks /out"
' _ "$root" || rc=$?
echo "run-gpu-checks exited $rc"
. tests/lib/assert.bash
for log in "$root"/out/*.log; do
    echo "---- $(basename "$log")"
    cat "$log"
done
echo "---- summary.txt"
cat "$root/out/summary.txt"
[ $rc -eq 77 ] || check_fail "run-gpu-checks exited $rc, not 77"
[ "$(tail -n 1 "$root/out/summary.txt")" = "no GPU: nothing measured" ] || check_fail "the summary's last line is not 'no GPU: nothing measured'"
for p in libs cuda-check test-cuda test-cuda-train sanitize-train nccl liveness train-100 bench-warm bench-gpu conv-cudnn coll-bench; do
    grep -Eq "^$p +(pass|skip) " "$root/out/summary.txt" || check_fail "part $p did not end pass or skip"
    [ -f "$root/out/$p.log" ] || check_fail "no log for part $p"
done
grep -q '^every library found, in' "$root/out/libs.log" || check_fail "the libs part did not find every library"
# Each resolved library is the kit's, glibc's (libc6's own files) or the toolkit's.
glibc=$(dpkg -L libc6 | grep -E '\.so' | xargs -n1 basename | sort -u | tr '\n' '|')
while read -r name path; do
    case $path in /opt/gpu-kit/*|"$CUDA_HOME"/lib64/*|not) continue ;; esac
    [[ "|$glibc" == *"|$(basename "$path")|"* ]] || check_fail "$name resolved outside the kit: $path"
done < <(awk '$2 == "=>" { print $1, $3 }' "$root/out/libs.log")
grep -q '^SKIP(gpu)' "$root/out/cuda-check.log" || check_fail "cuda_check did not reach its no-GPU skip"
grep -q 'fails cleanly' "$root/out/test-cuda-train.log" || check_fail "test_cuda_train.sh did not see --device cuda fail cleanly"
grep -q '^PASS: test_liveness' "$root/out/liveness.log" || check_fail "host-memory liveness did not pass"
[ "$(grep -c '^evaluate: Test accuracy' "$root/out/train-100.log")" -eq 3 ] || check_fail "not every seed's model was evaluated"
grep -Eq '^ +[0-9]+ +[0-9]+ +float' "$root/out/coll-bench.log" || check_fail "coll-bench on host memory printed no row"
if grep -En 'unbound variable|error while loading shared libraries|No such file or directory|command not found|cannot open shared object' \
        "$root"/out/*.log "$root/out/summary.txt"; then
    check_fail "a log shows a missing library, file or variable"
fi
[ "$failed" -eq 0 ] || { echo "FAIL: $failed checks failed"; exit 1; }
echo "PASS: the kit runs in a clean root, every part to its no-GPU skip or CPU-side result"
