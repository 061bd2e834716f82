#!/usr/bin/env bash
# make deb: the package builds from the current build, holds the plugin, the commands and the library,
# and pins the Slurm version the plugin was built against.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v dpkg-deb >/dev/null || { echo "SKIP(dep): dpkg-deb not available"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
contrib/deb/build-deb "$out"
deb=$(ls "$out"/slurm-batchai_*.deb)
dpkg-deb --info "$deb" >"$out/info"
dpkg-deb --contents "$deb" >"$out/contents"
slurm=$(dpkg-query -W -f='${Version}' libslurm-dev)
grep -q "slurmd (= $slurm)" "$out/info" || { echo "control does not pin Slurm $slurm"; cat "$out/info"; exit 1; }
grep -q "built against Slurm $slurm" "$out/info" || { echo "description does not name Slurm $slurm"; exit 1; }
for f in ./usr/bin/batchai-job ./usr/bin/cifar-train ./usr/bin/coll-bench ./usr/lib/libcollective.so \
         ./usr/include/collective.h /slurm-wlm/spank_batchai.so ./etc/slurm/plugstack.conf.d/batchai.conf.example; do
    grep -q -- "$f" "$out/contents" || { echo "missing $f"; cat "$out/contents"; exit 1; }
done
grep -q ' root/root ' "$out/contents" || { echo "files are not owned by root"; exit 1; }
echo "ok: $(basename "$deb"): $(sed -n 's/^ Depends: //p' "$out/info")"
