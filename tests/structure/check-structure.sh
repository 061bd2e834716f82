#!/usr/bin/env bash
# make check-structure: layers call only down, components stand alone.
#  1. In each folder of layers.conf, no file includes a header of a higher layer than its own.
#  2. No source file includes another component's file ("../" out of its top-level folder), and no
#     component's make fragment compiles another component's sources.
#  3. Within a component split into parts (layers.conf's "part" lines), a part includes only the parts it
#     uses, and a part with a public header (its "public" line) is seen from outside through that header
#     alone: a file elsewhere that includes another of its headers, by path or by bare name (which only an -I
#     into the part would find), is a violation, except in the folders its line names (its own unit tests).
#  4. The READMEs keep to their line limits and hold no issue number or commit hash, and the links of the
#     READMEs and docs/ name files that exist (readme-rules.sh).
# Violations still being worked off are listed in known-violations; the check fails on any violation not
# listed there, and on a listed one that is gone (so the list only shrinks). Prints what it found.
# STRUCTURE_ROOT: the tree to check (default: this checkout).
# run-tests: parallel
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${STRUCTURE_ROOT:-$(cd "$here/../.." && pwd)}
conf=${STRUCTURE_CONF:-$here/layers.conf}
known=${STRUCTURE_KNOWN:-$here/known-violations}
cd "$root"

declare -A layer_of   # folder/name -> layer index
declare -A layer_name # folder:index -> layer name
declare -A nlayers    # folder -> count
declare -A has_subfolders # folder -> 1 when its names are subfolders
declare -A part_uses  # component/part -> the parts it may include, space-separated
declare -A public_of  # component/part -> its public header
declare -A public_ok  # component/part -> folders that may include its other headers
found=$(mktemp)
trap 'rm -f "$found"' EXIT

while read -r folder lname names; do
    case $folder in '' | '#'*) continue ;; esac
    case $folder in
    part) names=${names#uses}; part_uses[$lname]=" ${names//none/} "; continue ;;
    public) public_of[$lname]=${names%% *}; public_ok[$lname]=" ${names#* } "; continue ;;
    esac
    n=${nlayers[$folder]:-0}
    layer_name[$folder:$n]=$lname
    for name in $names; do
        layer_of[$folder/$name]=$n
        [ -d "$folder/$name" ] && has_subfolders[$folder]=1
    done
    nlayers[$folder]=$((n + 1))
done <"$conf"

# The quoted includes of a file, one a line.
includes() { sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"; }

# 1. Layers. A name of layers.conf is a file stem of the folder, or a subfolder whose files all share its
# layer (trainer/src: core/, io/, ...). An include is resolved from the including file's folder, then from
# the listed folder (trainer/src's "io/x.h" through -Itrainer/src); one found in neither is another folder's.
unit_of() { # $1 folder, $2 a path under it: in $unit, the layer name that stands for the file
    local rel=${2#"$1"/}
    case $rel in */*) unit=${rel%%/*} ;; *) unit=${rel%.*} ;; esac
}
for folder in "${!nlayers[@]}"; do
    [ -d "$folder" ] || { echo "check-structure: $folder (layers.conf) is not a folder" >&2; exit 2; }
    while IFS= read -r f; do
        unit_of "$folder" "$f"
        me=${layer_of[$folder/$unit]:-}
        if [ -z "$me" ]; then
            echo "unplaced: $f is in no layer of $folder (add it to tests/structure/layers.conf)" >>"$found"
            continue
        fi
        while read -r inc; do
            case $inc in *../*) continue ;; esac # reaching out: the component check's
            if [ -e "${f%/*}/$inc" ]; then target=${f%/*}/$inc
            elif [ -e "$folder/$inc" ]; then target=$folder/$inc
            else continue; fi # another folder's (the public header, the system's)
            unit_of "$folder" "$target"
            them=${layer_of[$folder/$unit]:-}
            [ -n "$them" ] || continue       # an unplaced header is reported for itself
            if [ "$them" -gt "$me" ]; then
                echo "layer: $f (${layer_name[$folder:$me]}) includes $inc (${layer_name[$folder:$them]})" >>"$found"
            fi
        done < <(includes "$f")
    done < <(if [ -n "${has_subfolders[$folder]:-}" ]; then find "$folder" -mindepth 2 -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort
             else find "$folder" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort; fi)
done

# 2. Components: the top-level folders that hold sources.
components=$(for d in */; do d=${d%/}; [ "$d" != build ] && [ -e "$d/module.mk" ] && echo "$d"; done)
while IFS= read -r f; do
    top=${f%%/*}
    while read -r inc; do
        case $inc in *../*) ;; *) continue ;; esac
        # Fine only when it names an existing file of its own folder from where it stands; anything else
        # reaches out (a path that only works through some -I is reaching out all the same).
        target=$(realpath -m "$(dirname "$f")/$inc")
        case $target in
        "$root/$top"/*) [ -e "$target" ] && continue ;;
        esac
        echo "component: $f includes $inc, outside $top/" >>"$found"
    done < <(includes "$f")
done < <(git ls-files -- '*.c' '*.h' '*.cu' '*.cc' '*.cpp' 2>/dev/null || find . -name '*.[ch]' | sed 's,^\./,,')
for c in $components; do
    for mk in "$c"/*.mk; do
        for other in $components; do
            [ "$other" != "$c" ] || continue
            grep -o "$other/[A-Za-z0-9_/.-]*\.\(c\|cu\)\b" "$mk" 2>/dev/null | sort -u |
                sed "s,^,component: $mk compiles ," >>"$found" || true
        done
    done
done

# 3. Parts. An include names a part's file as "<part>/x.h" (through -I<component>), from the part's own folder,
# or by bare name through an -I into the part.
part_of() { # $1 a path: in $part, the part (component/part) it lies in, or ""
    local p
    part=
    for p in "${!part_uses[@]}"; do case $1 in "$p"/*) part=$p; return ;; esac; done
}
while IFS= read -r f; do
    part_of "$f"; mine=$part
    comp=
    [ -n "$mine" ] && comp=${mine%/*}
    while read -r inc; do
        case $inc in *../*) continue ;; esac
        target=
        if [ -e "${f%/*}/$inc" ]; then target=${f%/*}/$inc
        else
            for p in "${!part_uses[@]}"; do
                if [ -e "${p%/*}/$inc" ] && [[ $inc == */* ]]; then target=${p%/*}/$inc; break; fi
                # A bare name reaches into a part only through an -I its component's or the tests' builds give.
                case $f in "${p%/*}"/* | tests/*) ;; *) continue ;; esac
                if [[ $inc != */* ]] && [ -n "${public_of[$p]:-}" ] && [ -e "$p/$inc" ]; then target=$p/$inc; break; fi
            done
        fi
        [ -n "$target" ] || continue
        part_of "$target"; theirs=$part
        [ -n "$theirs" ] && [ "$theirs" != "$mine" ] || continue
        if [ -n "${public_of[$theirs]:-}" ] && [ "${target##*/}" != "${public_of[$theirs]}" ]; then
            ok=
            for d in ${public_ok[$theirs]}; do case $f in "$d"/*) ok=1 ;; esac; done
            [ -n "$ok" ] || echo "part: $f includes $inc, internal to $theirs/ (include ${theirs#*/}/${public_of[$theirs]})" >>"$found"
            continue
        fi
        if [ -n "$mine" ] && [ "${theirs%/*}" = "$comp" ] && [[ ${part_uses[$mine]} != *" ${theirs##*/} "* ]]; then
            echo "part: $f includes $inc: $mine/ does not use ${theirs##*/}/ (layers.conf)" >>"$found"
        fi
    done < <(includes "$f")
done < <(git ls-files -- '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' | sed 's,^\./,,')

# 4. READMEs.
"$here/readme-rules.sh" >>"$found"

sort -u -o "$found" "$found"
listed=$(grep -v '^#' "$known" 2>/dev/null | sed '/^$/d' | sort -u || true)
status=0
while IFS= read -r v; do
    [ -n "$v" ] || continue
    if grep -qxF -- "$v" <<<"$listed"; then echo "known    $v"; else echo "NEW      $v"; status=1; fi
done <"$found"
while IFS= read -r v; do
    [ -n "$v" ] || continue
    if ! grep -qxF -- "$v" "$found"; then echo "GONE     $v (remove it from $(basename "$known"))"; status=1; fi
done <<<"$listed"
nfound=$(grep -c . "$found" || true)
nknown=$(grep -c . <<<"$listed" || true)
echo "check-structure: $nfound violations, $nknown of them known and being worked off: $([ $status = 0 ] && echo ok || echo FAILED)"
exit $status
