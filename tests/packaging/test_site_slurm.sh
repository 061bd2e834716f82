#!/usr/bin/env bash
# The plugin built against a site's own Slurm, as spank_plugin/README.md tells admins to. The site's Slurm
# is the installed headers copied under a prefix of their own (/opt/slurm style) and renumbered 22.05.9, so
# that the plugin's version stamp shows which headers it was built from:
#   1. make SLURM_INCLUDE=... ; make install SLURM_INCLUDE=... SLURM_PLUGIN_DIR=... (staged in DESTDIR):
#      the plugin landed in the plugin directory, carries the site's version in plugin_version (what Slurm
#      compares when it loads it), and exports only slurm_spank_* and plugin_* (nm -D --defined-only);
#   2. the same Slurm found through its slurm.pc (PKG_CONFIG_PATH), plugin only: headers and plugin
#      directory both come from it;
#   3. spank_slurm.h's lower bound: the plugin's code compiles against Slurm 21.08.0 and (no upper bound)
#      26.05.0 numbers, and the build stops, naming the bound and the version, against 20.11.9;
#   4. the feature test for slurm_spank_init_failure_mode: against the real headers of 26.05.3 (from the
#      archive in ../shared/vendor/slurm) the plugin exports it set to ESPANK_NODE_FAILURE; against 22.05's
#      headers it has no such symbol.
# run-tests: parallel
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -e /usr/include/slurm/spank.h ] || { echo "SKIP(dep): no Slurm headers (libslurm-dev)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/lib/assert.bash

# site DIR VERSION_NUMBER: a Slurm under DIR: the installed headers in DIR/include, numbered VERSION_NUMBER.
site() {
    mkdir -p "$1/include"
    cp -r /usr/include/slurm "$1/include/"
    sed -i "s/^#define SLURM_VERSION_NUMBER .*/#define SLURM_VERSION_NUMBER $2/" "$1/include/slurm/slurm_version.h"
}

# plugin_ok PLUGIN VERSION_NUMBER: PLUGIN is stamped with that Slurm version and exports exactly what Slurm
# looks up (the version node BATCHAI_1.0 of the linker script aside).
plugin_ok() {
    local addr stamp
    [ -f "$1" ] || { check_fail "no plugin at $1"; return; }
    addr=$(nm -D --defined-only "$1" | awk '$3 ~ /^plugin_version@/ {print $1}')
    # objdump prints the 4 bytes little-endian: " 1201c 08051600  ...." is 0x00160508.
    stamp=$(objdump -s -j .rodata --start-address="0x$addr" --stop-address="$(printf '0x%x' $((0x$addr + 4)))" "$1" |
            awk 'END {b = $2; print substr(b, 7, 2) substr(b, 5, 2) substr(b, 3, 2) substr(b, 1, 2)}')
    [ "$stamp" = "$(printf '%08x' "$2")" ] || check_fail "$1 is stamped 0x$stamp, not $2: not built from the site's headers"
    nm -D --defined-only "$1" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}' | sort >"$tmp/exports"
    if grep -vxE 'slurm_spank_[a-z_]+|plugin_(name|type|version)|spank_plugin_version' "$tmp/exports"; then
        check_fail "$1 exports the symbols above"
    fi
    for sym in plugin_name plugin_type plugin_version slurm_spank_init slurm_spank_init_post_opt \
               slurm_spank_task_init slurm_spank_job_prolog slurm_spank_job_epilog slurm_spank_exit; do
        grep -qx "$sym" "$tmp/exports" || check_fail "$1 does not export $sym"
    done
}

# 1. The README's steps, names given.
opt=$tmp/opt/slurm
site "$opt" 0x160509
make --no-print-directory BUILD="$tmp/build" SLURM_INCLUDE="$opt/include" >"$tmp/log" 2>&1 ||
    { tail -n 30 "$tmp/log"; check_fail "make against $opt failed"; exit 1; }
make --no-print-directory install BUILD="$tmp/build" SLURM_INCLUDE="$opt/include" \
    SLURM_PLUGIN_DIR="$opt/lib/slurm" DESTDIR="$tmp/stage" >"$tmp/log" 2>&1 ||
    { tail -n 30 "$tmp/log"; check_fail "make install failed"; exit 1; }
plugin_ok "$tmp/stage$opt/lib/slurm/spank_batchai.so" 0x160509

# 2. Found through slurm.pc, as Slurm's RPMs (slurm-devel) and its own installs since 24.05 write it.
pc=$tmp/pc/slurm
site "$pc" 0x160509
mkdir -p "$pc/lib/pkgconfig"
printf 'libdir=%s\nincludedir=%s\n\nName: slurm\nDescription: Slurm Workload Manager\nVersion: 22.05.9\n' \
    "$pc/lib" "$pc/include" >"$pc/lib/pkgconfig/slurm.pc"
PKG_CONFIG_PATH=$pc/lib/pkgconfig make --no-print-directory BUILD="$tmp/build-pc" DESTDIR="$tmp/stage-pc" \
    install-spank-plugin >"$tmp/log" 2>&1 || { tail -n 30 "$tmp/log"; check_fail "make install-spank-plugin with slurm.pc failed"; }
plugin_ok "$tmp/stage-pc$pc/lib/slurm/spank_batchai.so" 0x160509

# 3. The lower bound, on the plugin's own translation unit and flags; no upper bound.
for case in 0x150800:accept 0x1a0500:accept 0x140b09:refuse; do
    number=${case%:*} dir=$tmp/v$number
    site "$dir" "$number"
    if make --no-print-directory BUILD="$dir/build" SLURM_INCLUDE="$dir/include" \
        "$dir/build/obj/spank_plugin/spank/spank_dispatch.o" >"$tmp/log" 2>&1; then
        [ "${case#*:}" = accept ] || check_fail "Slurm $number was accepted"
    elif [ "${case#*:}" = accept ]; then
        tail -n 20 "$tmp/log"; check_fail "Slurm $number was refused"
    elif ! grep -q 'spank_batchai needs Slurm 21.08 or later' "$tmp/log" || ! grep -q "NUMBER $number" "$tmp/log"; then
        tail -n 20 "$tmp/log"; check_fail "Slurm $number: the build failed without naming the bound and the version"
    fi
done

# 4. slurm_spank_init_failure_mode, found by the feature test, with its value read from the plugin.
# data_word PLUGIN SYMBOL: the 4-byte value of a defined data symbol, as a decimal number.
data_word() {
    local addr hex
    addr=$(nm -D --defined-only "$1" | awk -v s="$2" '$3 ~ "^" s "@" {print $1}')
    [ -n "$addr" ] || return 1
    hex=$(objdump -s -j .data --start-address="0x$addr" --stop-address="$(printf '0x%x' $((0x$addr + 4)))" "$1" |
        awk 'END {b = $2; print substr(b, 7, 2) substr(b, 5, 2) substr(b, 3, 2) substr(b, 1, 2)}')
    echo $((0x$hex))
}
archive=../shared/vendor/slurm/slurm-26.05.3.tar.xz
if [ -r "$archive" ]; then
    new=$tmp/v26
    mkdir -p "$new/include"
    tar -xJf "$archive" -C "$new/include" --strip-components=1 --wildcards '*/slurm/*.h'
    sed 's/^#define SLURM_VERSION_NUMBER .*/#define SLURM_VERSION_NUMBER 0x1a0503/' \
        /usr/include/slurm/slurm_version.h >"$new/include/slurm/slurm_version.h"
    make --no-print-directory BUILD="$new/build" SLURM_INCLUDE="$new/include" "$new/build/lib/spank_batchai.so" \
        >"$tmp/log" 2>&1 || { tail -n 30 "$tmp/log"; check_fail "make against 26.05.3's headers failed"; exit 1; }
    plugin_ok "$new/build/lib/spank_batchai.so" 0x1a0503
    # ESPANK_NODE_FAILURE: the enum member after ESPANK_NOT_LOCAL in 26.05.3's slurm_errno.h (3011).
    want=$(printf '#include <slurm/slurm_errno.h>\nint main(void) { printf("%%d", ESPANK_NODE_FAILURE); return 0; }\n' |
        cc -include stdio.h -isystem "$new/include" -x c - -o "$tmp/enum" && "$tmp/enum")
    got=$(data_word "$new/build/lib/spank_batchai.so" slurm_spank_init_failure_mode) ||
        check_fail "built against 26.05.3, the plugin does not export slurm_spank_init_failure_mode"
    [ "${got:-}" = "$want" ] || check_fail "slurm_spank_init_failure_mode is ${got:-none}, not ESPANK_NODE_FAILURE ($want)"
    if nm -D --defined-only "$tmp/build/lib/spank_batchai.so" | grep -q slurm_spank_init_failure_mode; then
        check_fail "built against 22.05's headers, the plugin exports slurm_spank_init_failure_mode"
    fi
    mode="26.05.3 headers: init_failure_mode=ESPANK_NODE_FAILURE ($want)"
else
    echo "SKIP(shared): $archive is absent: slurm_spank_init_failure_mode not checked"
    [ "$failed" -eq 0 ] && exit 77
fi
[ "$failed" -eq 0 ] || exit 1
echo "ok: plugin built from a site's headers (names and slurm.pc), installed and exporting only $(paste -sd' ' "$tmp/exports"); 21.08 and 26.05 numbers accepted, 20.11 refused; $mode"
