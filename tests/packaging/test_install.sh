#!/usr/bin/env bash
# make install as distro packagers run it. A staged install (DESTDIR, PREFIX=/usr, LIBDIR=/usr/lib64 as on
# RHEL) puts every library and libcollective.pc in LIBDIR and none in PREFIX/lib, the manual pages in
# PREFIX/share/man, programs 0755 (the plugin's batchai-plan too) and every other file 0644, and a libcollective.pc naming the final PREFIX
# and LIBDIR. A small program then builds with `pkg-config --cflags --libs libcollective` and runs a
# collective: against the staged tree (through PKG_CONFIG_SYSROOT_DIR, as package builds use a staged .pc),
# against a real install into a prefix with a multiarch LIBDIR (PKG_CONFIG_PATH alone), and statically
# through the .pc's Libs.private.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
[ -e "$BUILD/lib/libcollective.so" ] || { echo "SKIP(dep): libcollective is not built (no MPI)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/lib/assert.bash

stage=$tmp/stage
make --no-print-directory install BUILD="$BUILD" DESTDIR="$stage" PREFIX=/usr LIBDIR=/usr/lib64 >"$tmp/log"
for f in usr/bin/batchai-job usr/bin/cifar-train usr/bin/coll-bench usr/include/collective.h \
         usr/lib64/libcollective.so usr/lib64/libcollective.a usr/lib64/pkgconfig/libcollective.pc \
         usr/share/man/man1/batchai-job.1 usr/share/man/man1/cifar-train.1 usr/share/man/man1/coll-bench.1 \
         usr/share/man/man8/spank_batchai.8 usr/lib/tmpfiles.d/slurm-batchai.conf; do
    [ -f "$stage/$f" ] || fail "make install did not stage /$f"
done
# The tmpfiles.d line as systemd reads it: into an empty root, job_temp's default comes out root's, 0755 (the
# plugin refuses anything else), and a directory a user made there first is handed back to root.
if command -v systemd-tmpfiles >/dev/null; then
    root=$tmp/root
    systemd-tmpfiles --root="$root" --create "$stage/usr/lib/tmpfiles.d/slurm-batchai.conf" ||
        fail "systemd-tmpfiles refuses slurm-batchai.conf"
    [ "$(stat -c '%U %G %a %F' "$root/tmp/batchai")" = "root root 755 directory" ] ||
        fail "slurm-batchai.conf makes $(stat -c '%U %G %a %F' "$root/tmp/batchai" 2>&1), not root's 0755 /tmp/batchai"
    chown nobody "$root/tmp/batchai" && chmod 0777 "$root/tmp/batchai"
    systemd-tmpfiles --root="$root" --create "$stage/usr/lib/tmpfiles.d/slurm-batchai.conf"
    [ "$(stat -c '%U %a' "$root/tmp/batchai")" = "root 755" ] || fail "slurm-batchai.conf does not take /tmp/batchai back"
fi
misplaced=$(find "$stage" -type f \( -name 'lib*.so' -o -name '*.a' -o -name '*.pc' \) ! -path "$stage/usr/lib64/*")
[ -z "$misplaced" ] || fail "libraries outside LIBDIR: $misplaced"
while read -r mode path; do
    case $path in
    usr/bin/* | */batchai-plan) want=755 ;; # batchai-plan: the plugin's parser, beside it (SECURITY.md)
    *) want=644 ;;
    esac
    [ "$mode" = "$want" ] || fail "/$path has mode $mode, expected $want"
done < <(find "$stage" -type f -printf '%m %P\n')
pc=$stage/usr/lib64/pkgconfig/libcollective.pc
if ! grep -qx 'prefix=/usr' "$pc" || ! grep -qx 'libdir=/usr/lib64' "$pc"; then
    cat "$pc"; fail "libcollective.pc does not name PREFIX=/usr and LIBDIR=/usr/lib64"
fi

cat >"$tmp/sum.c" <<'EOF'
#include <collective.h>
#include <stdio.h>

int main(void)
{
    float x[3] = {1, 2, 3};
    if (coll_init(NULL) != COLL_OK || coll_allreduce(x, x, 3, COLL_FLOAT32, COLL_SUM) != COLL_OK) {
        fprintf(stderr, "%s\n", coll_last_error());
        return 1;
    }
    printf("size %d sum %g\n", coll_size(), x[0] + x[1] + x[2]);
    return coll_finalize() != COLL_OK;
}
EOF
# build_and_run NAME LIBDIR [sed expression on the link flags]: compile sum.c with the flags pkg-config gives
# in the caller's environment, run it (one process, no launcher) with LIBDIR on the loader path.
build_and_run() {
    local flags out
    flags=$(pkg-config --cflags --libs ${3:+--static} libcollective) || fail "$1: pkg-config finds no libcollective"
    [ -z "${3:-}" ] || flags=$(sed "$3" <<<"$flags")
    echo "$1: cc sum.c $flags"
    # shellcheck disable=SC2086
    cc -o "$tmp/$1" "$tmp/sum.c" $flags || fail "$1: sum.c does not build with those flags"
    out=$(LD_LIBRARY_PATH=$2 "$tmp/$1") || fail "$1: the program failed"
    [ "$out" = "size 1 sum 6" ] || fail "$1: printed '$out', expected 'size 1 sum 6'"
}

PKG_CONFIG_PATH=$stage/usr/lib64/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage build_and_run staged "$stage/usr/lib64"

prefix=$tmp/prefix multiarch=$tmp/prefix/lib/x86_64-linux-gnu
make --no-print-directory install BUILD="$BUILD" PREFIX="$prefix" LIBDIR="$multiarch" \
    SLURM_PLUGIN_DIR="$prefix/lib/slurm" SLURM_SYSCONF_DIR="$prefix/etc/slurm" >"$tmp/log"
PKG_CONFIG_PATH=$multiarch/pkgconfig build_and_run installed "$multiarch"
readelf -d "$tmp/installed" | grep -q 'NEEDED.*\[libcollective\.so\]' || fail "installed: not linked with libcollective.so"
# Static: the archive instead of the shared object, so the link needs the .pc's Libs.private (MPI, threads).
PKG_CONFIG_PATH=$multiarch/pkgconfig build_and_run static /nonexistent 's/-lcollective/-l:libcollective.a/'
if readelf -d "$tmp/static" | grep -q 'libcollective'; then fail "static: still linked with libcollective.so"; fi
echo "ok: staged and installed layouts, modes, libcollective.pc (shared and static)"
