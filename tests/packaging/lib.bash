# shellcheck shell=bash disable=SC2034 # failed is read by the tests that source this file
# tests/packaging/lib.bash: what the .deb and the rpm must both hold (sourced by test_deb.sh, test_rpm.sh).
# A package's contents come as a listing, one entry per line: "PERMS OWNER/GROUP /PATH".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD=${BUILD:-build}
export BUILD
. tests/lib/assert.bash

# check_entries LISTING: every entry is root's; directories, programs in /usr/bin and the plugin's job-file
# parser batchai-plan (exec'd by the prolog, beside the plugin) are 0755, every other file 0644 (the plugin
# and libraries too: the loader needs no x bit); nothing else (no link, no device).
check_entries() {
    local perms owner path want n=0
    while read -r perms owner path; do
        case $perms:$path in
        d*) want=drwxr-xr-x ;;
        -*:/usr/bin/* | -*:*/batchai-plan) want=-rwxr-xr-x ;;
        -*) want=-rw-r--r-- ;;
        *) want="a directory or a regular file" ;;
        esac
        [ "$owner" = root/root ] || check_fail "$path is owned by $owner, not root/root"
        [ "$perms" = "$want" ] || check_fail "$path is $perms, expected $want"
        n=$((n + 1))
    done <"$1"
    [ "$n" -gt 0 ] || check_fail "the listing is empty"
}

# check_layout LISTING LIBDIR PLUGINDIR: the files make install puts in a package, libraries in LIBDIR and
# the plugin in Slurm's PLUGINDIR; manual pages compressed or not (RHEL's rpmbuild gzips them).
check_layout() {
    local f
    for f in /usr/bin/batchai-job /usr/bin/cifar-train /usr/bin/coll-bench /usr/include/collective.h \
             "$2/libcollective.so" "$2/libcollective.a" "$2/pkgconfig/libcollective.pc" "$3/spank_batchai.so" "$3/batchai-plan" \
             /etc/slurm/plugstack.conf.d/batchai.conf.example /usr/lib/tmpfiles.d/slurm-batchai.conf \
             /usr/share/man/man1/batchai-job.1 \
             /usr/share/man/man1/cifar-train.1 /usr/share/man/man1/coll-bench.1 /usr/share/man/man8/spank_batchai.8; do
        grep -qE " ${f//./\\.}(\.gz)?$" "$1" || check_fail "missing $f"
    done
}
