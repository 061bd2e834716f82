#!/usr/bin/env bash
# Manual pages: each passes `mandoc -T lint` without a warning and renders with man-db's `man -l` (groff)
# with nothing on stderr; every option a program's --help prints (--long and -x) is in its rendered page,
# and every key of the settings table (spank_plugin/jobfile/settings.c) is in spank_batchai(8).
# run-tests: parallel
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
for tool in mandoc man; do
    command -v "$tool" >/dev/null || { echo "SKIP(dep): $tool is not installed"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/lib/assert.bash

# render PAGE: plain ASCII text, lines wide enough that groff neither wraps nor hyphenates a word.
render() {
    MANWIDTH=1000 MANPAGER=cat LC_ALL=C man -l "$1" 2>"$tmp/stderr" >"$tmp/text"
    [ -s "$tmp/text" ] || check_fail "$1: man -l printed nothing"
    [ ! -s "$tmp/stderr" ] || check_fail "$1: man -l complained: $(cat "$tmp/stderr")"
}

# need PAGE WHAT WORD...: each WORD is in PAGE's rendered text as a word of its own (--fused is not found in
# --fused-sizes, -s not in --settings).
need() {
    local page=$1 what=$2 word re
    shift 2
    render "$page"
    for word in "$@"; do
        # shellcheck disable=SC2001 # one substitution of every regex metacharacter
        re=$(sed 's/[][\.|$*+?(){}^]/\\&/g' <<<"$word")
        grep -qE -- "(^|[^-[:alnum:]_])$re([^-[:alnum:]_]|$)" "$tmp/text" || check_fail "$page does not document $what $word"
    done
}

pages=(spank_plugin/command/batchai-job.1 trainer/cifar-train.1 libcollective/coll-bench.1 spank_plugin/spank/spank_batchai.8)
for page in "${pages[@]}"; do
    mandoc -T lint -W warning "$page" || check_fail "$page: mandoc -T lint found the faults above"
    render "$page"
done

for pair in batchai-job:spank_plugin/command/batchai-job.1 cifar-train:trainer/cifar-train.1 \
            coll-bench:libcollective/coll-bench.1; do
    prog=$BUILD/bin/${pair%%:*}
    [ -x "$prog" ] || { echo "SKIP(dep): $prog is not built (it needs MPI)"; exit 77; }
    "$prog" --help >"$tmp/help" || check_fail "$prog --help exited $?"
    # The options are the words starting with - or -- after a space, '[' or ','.
    mapfile -t options < <(grep -oE '(^|[ [,])--?[[:alpha:]][-[:alnum:]]*' "$tmp/help" | sed 's/^[ [,]//' | sort -u)
    [ "${#options[@]}" -ge 4 ] || check_fail "$prog --help: found only ${#options[@]} options: ${options[*]}"
    need "${pair#*:}" "option" "${options[@]}"
    echo "$prog: ${#options[@]} options checked: ${options[*]}"
done

# Every key of the settings table (settings-doc md's rows: "| `key=VALUE` | ..."), rendered in spank_batchai(8).
doc=$BUILD/tools/settings-doc
[ -x "$doc" ] || { echo "SKIP(dep): $doc is not built"; exit 77; }
# shellcheck disable=SC2016 # the backquotes are Markdown's, not the shell's
mapfile -t keys < <("$doc" md | sed -n 's/^| `\([^=`]*\)=.*/\1/p')
[ "${#keys[@]}" -ge 15 ] || check_fail "settings-doc md: parsed only ${#keys[@]} keys: ${keys[*]}"
need spank_plugin/spank/spank_batchai.8 "setting" "${keys[@]}"
echo "spank_batchai(8): ${#keys[@]} settings checked: ${keys[*]}"
[ "$failed" -eq 0 ] || exit 1
