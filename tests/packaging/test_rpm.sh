#!/usr/bin/env bash
# make rpm: Debian's rpmbuild builds the package from the current build in RHEL's layout (/usr/lib64, the
# plugin in /usr/lib64/slurm); every entry is root's with the modes of lib.bash; it holds what the .deb holds;
# it requires the Slurm release the plugin was built against (rpm -qpR), its library dependencies are
# generated from the ELF files but leave out the CUDA toolkit's, and it provides pkgconfig(libcollective).
# shellcheck source=tests/packaging/lib.bash
source "$(dirname "$0")/lib.bash"
command -v rpmbuild >/dev/null || { echo "SKIP(dep): rpmbuild is not installed (package rpm)"; exit 77; }
[ -e "$BUILD/lib/spank_batchai.so" ] || { echo "SKIP(dep): the plugin is not built (no Slurm headers)"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
contrib/rpm/build-rpm "$out"
rpm=$(ls "$out"/slurm-batchai-*.rpm)
rpm -qp --queryformat '[%{FILEMODES:perms} %{FILEUSERNAME}/%{FILEGROUPNAME} %{FILENAMES}\n]' "$rpm" >"$out/contents"
rpm -qpR "$rpm" >"$out/requires"
rpm -qp --provides "$rpm" >"$out/provides"
rpm -qpi "$rpm" >"$out/info"
# The Slurm release of the installed headers, from Debian's version of them (22.05.8-4+deb12u3: 22.05.8).
slurm=$(dpkg-query -W -f='${Version}' libslurm-dev | sed 's/-[^-]*$//')
grep -qx "slurm = $slurm" "$out/requires" || check_fail "does not require slurm = $slurm"
grep -q "built against Slurm $slurm" "$out/info" || check_fail "the description does not name Slurm $slurm"
while read -r soname; do
    grep -qxF "$soname()(64bit)" "$out/requires" || check_fail "no dependency generated for batchai-job's $soname"
done < <(readelf -d "$BUILD/bin/batchai-job" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if grep -E '^lib(cudart|cublas|cublasLt|nccl)\.so' "$out/requires"; then check_fail "requires the CUDA toolkit's libraries"; fi
version=$(sed -n 's/^VERSION := //p' mk/config.mk)
grep -qxF "pkgconfig(libcollective) = $version" "$out/provides" || check_fail "does not provide pkgconfig(libcollective)"
rpm -qp --configfiles "$rpm" | grep -qx /etc/slurm/plugstack.conf.d/batchai.conf.example ||
    check_fail "the plugstack example is not a %config file"
check_layout "$out/contents" /usr/lib64 /usr/lib64/slurm
check_entries "$out/contents"
[ "$failed" -eq 0 ] || { cat "$out/contents" "$out/requires"; exit 1; }
echo "ok: $(basename "$rpm"), $(wc -l <"$out/contents") entries, requires slurm = $slurm"
