#!/usr/bin/env bash
# The READMEs are for their readers (check-structure.sh runs this in the tree to check and counts each line
# it prints as a violation): each README of the list below stays within its line limit, without stretching
# lines (each at most 160 characters, table rows and code included: a violation is named by the file and
# the line's first 40 characters, so that it survives edits elsewhere), and holds no issue number and no
# commit hash, history going to docs/benchmarks.md and the git log; and a relative link of a README or of
# docs/*.md names a file or folder that exists.
#   issue number: "#12" or "issue 12" in prose (a "#0" inside `code` is a program's message, not an issue);
#   commit hash:  a word of 7 to 40 hex digits with a digit and a letter in prose, or one inside `code`
#                 that git resolves to a commit (a checksum or fingerprint in a quoted message is neither).
set -euo pipefail

# file limit
readmes='README.md 250
spank_plugin/README.md 200
trainer/README.md 200
libcollective/README.md 200
schemas/README.md 200
docs/gpu-kit.md 200'

# Prints the faults of FILE with its LIMIT; a hex word inside `code` (a fenced block's lines are all code)
# comes out as "code FILE:NR WORD" for git to judge.
scan() {
    awk -v file="$1" -v limit="$2" '
    function hexwords(text, kind,    w) {
        text = " " text " " # a word at the start has a character before it (mawk: substr(s, 0, 1) is s[1])
        while (match(text, /[0-9A-Fa-f]+/)) {
            w = substr(text, RSTART, RLENGTH)
            before = substr(text, RSTART - 1, 1); after = substr(text, RSTART + RLENGTH, 1)
            text = substr(text, RSTART + RLENGTH)
            if (before ~ /[[:alnum:]_]/ || after ~ /[[:alnum:]_]/) continue
            if (length(w) < 7 || length(w) > 40 || w !~ /[A-Fa-f]/) continue
            if (kind == "prose" && w ~ /[0-9]/) print "readme: " file ":" NR " holds a commit hash: " w
            else if (kind == "code") print "code " file ":" NR " " w
        }
    }
    {
        if (length($0) > 160) print "readme: " file ": a line over 160 characters: " substr($0, 1, 40)
        if ($0 ~ /^[[:space:]]*```/) { fence = !fence; next }
        if (fence) { hexwords($0, "code"); next }
        prose = $0
        while (match(prose, /`[^`]*`/)) {
            span = substr(prose, RSTART + 1, RLENGTH - 2)
            prose = substr(prose, 1, RSTART - 1) " " substr(prose, RSTART + RLENGTH)
            hexwords(span, "code")
        }
        hexwords(prose, "prose")
        rest = " " prose
        while (match(rest, /[^[:alnum:]&\/]#[0-9]+/)) {
            print "readme: " file ":" NR " holds an issue number: " substr(rest, RSTART + 1, RLENGTH - 1)
            rest = substr(rest, RSTART + RLENGTH)
        }
        rest = " " tolower(prose)
        while (match(rest, /[^[:alnum:]]issues? [0-9]+/)) {
            print "readme: " file ":" NR " holds an issue number: " substr(rest, RSTART + 1, RLENGTH - 1)
            rest = substr(rest, RSTART + RLENGTH)
        }
    }
    END { if (NR > limit) print "readme: " file " has " NR " lines, more than " limit }' "$1"
}

while read -r file limit; do
    if [ -e "$file" ]; then scan "$file" "$limit"; else echo "readme: $file is missing"; fi
done <<<"$readmes" | while read -r kind where word; do
    if [ "$kind" != code ]; then echo "$kind $where $word"
    elif git rev-parse -q --verify "$word^{commit}" >/dev/null 2>&1; then
        echo "readme: $where holds a commit hash: $word"
    fi
done

# GitHub's anchors of the headings of a markdown FILE, one a line: lower case, punctuation dropped, spaces
# to hyphens.
anchors() {
    awk '/^[[:space:]]*```/ { fence = !fence } !fence && /^#+ / {
        h = tolower($0); sub(/^#+ +/, "", h); gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h }' "$1"
}

# Relative links, [text](target#anchor), from the READMEs and docs/: the target exists, and so does the
# heading an anchor into a markdown file names.
for file in $(git ls-files -- '*README.md' 'docs/*.md' 2>/dev/null || find . -name README.md -o -path './docs/*.md'); do
    [ -e "$file" ] || continue
    dir=$(dirname "$file")
    { grep -noE '\]\([^)[:space:]]+\)' "$file" || true; } | while IFS=: read -r nr link; do
        target=${link#](}
        target=${target%)}
        anchor=
        case $target in *'#'*) anchor=${target#*#} ;; esac
        target=${target%%#*}
        case $target in *://* | mailto:*) continue ;; '') target=$(basename "$file") ;; esac
        if [ ! -e "$dir/$target" ]; then
            echo "readme: $file:$nr links to $target, which does not exist"
        elif [ -n "$anchor" ] && [ "${target%.md}" != "$target" ] && ! anchors "$dir/$target" | grep -qxF -- "$anchor"; then
            echo "readme: $file:$nr links to $target#$anchor, a heading $target does not have"
        fi
    done
done
