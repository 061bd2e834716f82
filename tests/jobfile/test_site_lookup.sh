#!/usr/bin/env bash
# batchai-job takes the site's settings from the plugin's plugstack line, found as Slurm finds it
# (command/plugstack.h): SLURM_CONF's PlugStackConfig through an Include, the stack's include globs, a
# relative plugin path, plugstack.conf beside slurm.conf, no line at all, a bad word; --set adds to the
# line, --settings stands instead of it. Each case checks the line --help names and a verdict that only those settings give.
# run-tests: parallel
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/jobfile/jobfile-env.sh
bin=$PWD/$BUILD/san/bin/batchai-job
need_built "$bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=1; }
mount_fs=$PWD/tests/jobfiles/valid/custom-toolkit-unmanaged-fs.json
container=$PWD/tests/jobfiles/valid/chainer.json

# 1. PlugStackConfig in a file slurm.conf includes; the plugin's line in a file the stack includes.
mkdir -p "$tmp/a/stack/conf.d"
# A nested Include's relative path is beside slurm.conf too, as in Slurm.
mkdir -p "$tmp/a/inc"
printf 'ClusterName=t  # a comment\nInclude inc/extra.conf\n' >"$tmp/a/slurm.conf"
printf 'include inc/more.conf\n' >"$tmp/a/inc/extra.conf"
printf 'SlurmctldPort=1 plugstackconfig="%s"\n' "$tmp/a/stack/plug.conf" >"$tmp/a/inc/more.conf"
printf '# no plugin here\noptional /usr/lib/other/spank_other.so allow_mount_command=no\ninclude conf.d/*.conf\n' \
    >"$tmp/a/stack/plug.conf"
printf '\nrequired /usr/lib/slurm/spank_batchai.so allow_mount_command=yes container_runtime=none # site\n' \
    >"$tmp/a/stack/conf.d/10-batchai.conf"
export SLURM_CONF=$tmp/a/slurm.conf
"$bin" --help | grep -qF "Settings here: the spank_batchai.so line of $tmp/a/stack/conf.d/10-batchai.conf:2" ||
    no "--help does not name the included plugin line: $("$bin" --help | tail -n 1)"
"$bin" --no-host validate "$mount_fs" >/dev/null 2>&1 || no "allow_mount_command=yes of the plugin line was not applied"
"$bin" --no-host validate "$container" >/dev/null 2>&1 && no "container_runtime=none of the plugin line was not applied"
# --set adds to the plugin's line: that word replaces its key, the line's other words stay.
"$bin" --no-host -o container_runtime=oci validate "$container" >/dev/null 2>&1 || no "--set did not replace its key"
"$bin" --no-host -o container_runtime=oci validate "$mount_fs" >/dev/null 2>&1 || no "--set dropped the line's other words"
"$bin" --no-host -o allow_mount_command=no validate "$mount_fs" >/dev/null 2>&1 && no "--set did not change the line's word"
"$bin" -o python=x --help | grep -qF "with --set on top" ||
    no "--help does not say --set was used: $("$bin" -o python=x --help | tail -n 1)"
# --settings FILE stands instead of the line.
printf 'python=y\n' >"$tmp/other.conf"
"$bin" --no-host --settings "$tmp/other.conf" validate "$mount_fs" >/dev/null 2>&1 && no "--settings kept the line's words"
"$bin" --settings "$tmp/other.conf" --help | grep -qF "Settings here: $tmp/other.conf and the defaults" || no "--help does not name --settings"

# 2. No PlugStackConfig: plugstack.conf beside slurm.conf, with a relative plugin path.
mkdir -p "$tmp/b"
printf 'ClusterName=t\n' >"$tmp/b/slurm.conf"
printf 'optional spank_batchai.so allow_mount_command=no\n' >"$tmp/b/plugstack.conf"
export SLURM_CONF=$tmp/b/slurm.conf
"$bin" --help | grep -qF "line of $tmp/b/plugstack.conf:1" || no "plugstack.conf beside slurm.conf was not read"
# The issue's case: translate refuses what sbatch refuses under allow_mount_command=no.
out=$("$bin" translate "$mount_fs" 2>&1) && no "translate printed a script with a mountCommand: $out"
grep -qF "mountCommand is not allowed on this site" <<<"$out" || no "translate does not say why: $out"

# 3. No slurm.conf, no stack: the defaults, said so.
export SLURM_CONF=$tmp/none/slurm.conf
"$bin" --help | grep -qF "Settings here: the defaults: no spank_batchai.so line in $tmp/none/plugstack.conf" ||
    no "--help does not say the defaults are used: $("$bin" --help | tail -n 1)"
"$bin" --no-host validate "$mount_fs" >/dev/null 2>&1 && no "the default allow_mount_command=no was not applied"

# 4. A bad word on the plugin's line is an error naming it and the line, as in the plugin.
printf 'required /x/spank_batchai.so allow_mount_comand=yes\n' >"$tmp/b/plugstack.conf"
export SLURM_CONF=$tmp/b/slurm.conf
out=$("$bin" validate "$mount_fs" 2>&1); rc=$?
[ $rc -eq 2 ] || no "a bad plugin line gives exit $rc, expected 2"
grep -qF "$tmp/b/plugstack.conf:1" <<<"$out" && grep -qF "allow_mount_comand" <<<"$out" ||
    no "the message does not name the line and the word: $out"

[ $fail -eq 0 ] && echo "site lookup: all cases passed"
exit $fail
