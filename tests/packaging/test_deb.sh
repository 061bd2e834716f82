#!/usr/bin/env bash
# make deb: the package builds from the current build in Debian's multiarch layout; every entry is root's
# with the modes of lib.bash; it holds the plugin, the commands, the library with its header and pkg-config
# file, and the manual pages; it pins the Slurm version the plugin was built against.
# shellcheck source=tests/packaging/lib.bash
source "$(dirname "$0")/lib.bash"
command -v dpkg-deb >/dev/null || { echo "SKIP(dep): dpkg-deb not available"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
contrib/deb/build-deb "$out"
deb=$(ls "$out"/slurm-batchai_*.deb)
dpkg-deb --info "$deb" >"$out/info"
# "drwxr-xr-x root/root 0 2025-11-23 14:08 ./usr/" becomes "drwxr-xr-x root/root /usr"; "./" is "/".
dpkg-deb --contents "$deb" |
    awk '{p = substr($6, 2); sub(/\/$/, "", p); print $1, $2, (p == "" ? "/" : p)}' >"$out/contents"
slurm=$(dpkg-query -W -f='${Version}' libslurm-dev)
grep -q "slurmd (= $slurm)" "$out/info" || check_fail "control does not pin Slurm $slurm"
grep -q "built against Slurm $slurm" "$out/info" || check_fail "description does not name Slurm $slurm"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
check_layout "$out/contents" "/usr/lib/$multiarch" "/usr/lib/$multiarch/slurm-wlm"
check_entries "$out/contents"
[ "$failed" -eq 0 ] || { cat "$out/info" "$out/contents"; exit 1; }
echo "ok: $(basename "$deb"), $(wc -l <"$out/contents") entries: $(sed -n 's/^ Depends: //p' "$out/info")"
