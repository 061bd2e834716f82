#!/usr/bin/env bash
# The official Batch AI recipes ($shared/reference/batchai/recipes) on a site with the default settings, the
# user mapping each share to a directory of their own (--share NAME=DIR, sbatch's --batchai-share):
#   - without the maps, validate names every share the recipe mounts (so the maps are what makes them pass);
#   - an output directory on a mount of the site's mount_root that is not there is named (then made);
#   - with them, the only faults left are the images, which only an admin can stage (no TF/PyTorch image
#     here, and none can be pulled);
#   - with stand-in bundles staged for those images (an empty config.json, the admin's part), each recipe
#     validates, and translate's script links each share to the user's directory and writes the logs there.
# The recipes cannot run here: their images (TensorFlow 1.8 GPU, PyTorch 0.4 CUDA 9) are not on this
# machine, their preparation installs packages with apt and pip (no network), and the benchmark needs
# InfiniBand and the TF benchmark scripts in its share.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bin=$PWD/$BUILD/san/bin/batchai-job
shared=${SHARED_DIR:-$PWD/../shared}
recipes=$shared/reference/batchai/recipes
[ -d "$recipes" ] || { echo "SKIP(shared): no $recipes (set SHARED_DIR)"; exit 77; }
[ -x "$bin" ] || { echo "FAIL: $bin is not built"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
: >"$T/site.conf" # the defaults: no share and no image mapped by the admins
. tests/lib/assert.bash
n=0
for f in "$recipes"/*.json; do
    r=$(basename "$f" .json)
    # The shares the recipe mounts: the last part of each azureFileUrl, and where it is mounted.
    mapfile -t shares < <(/usr/bin/python3 -c '
import json, sys
mv = json.load(open(sys.argv[1]))["properties"].get("mountVolumes", {})
for s in mv.get("azureFileShares", []):
    print(s["azureFileUrl"].rstrip("/").rsplit("/", 1)[1], s["relativeMountPath"])' "$f") ||
        fail "$r: cannot read its shares"
    [ ${#shares[@]} -gt 0 ] || fail "$r mounts no share: this test would prove nothing"
    args=()
    for s in "${shares[@]}"; do
        name=${s%% *}
        mkdir -p "$T/$r/$name"
        args+=(--share "$name=$T/$r/$name")
    done
    # Without the user's maps: every share is named, with what to do.
    out=$("$bin" -s "$T/site.conf" validate "$f" 2>&1) && fail "$r validated with no share mapped: $out"
    for s in "${shares[@]}"; do
        grep -qF "share \"${s%% *}\" is not available on this cluster" <<<"$out" &&
            grep -qF -- "--batchai-share=${s%% *}=DIR" <<<"$out" || fail "$r: share ${s%% *} not named: $out"
    done
    # An output directory on a mount of the site's mount_root ($AZ_BATCHAI_MOUNT_ROOT/external, Horovod-PyTorch)
    # that this cluster does not have is named at validate, not left to fail when the job starts; with the
    # mount there (the admins'), it passes.
    mapfile -t site_mounts < <(/usr/bin/python3 -c '
import json, sys
for i, o in enumerate(json.load(open(sys.argv[1]))["properties"].get("outputDirectories", [])):
    if o["pathPrefix"].startswith("$AZ_BATCHAI_MOUNT_ROOT/"):
        print(i, o["id"], o["pathPrefix"].split("/")[1])' "$f") || fail "$r: cannot read its outputs"
    args+=(-o mount_root="$T/$r/mounts")
    mkdir -p "$T/$r/mounts"
    if [ ${#site_mounts[@]} -gt 0 ]; then
        out=$("$bin" -s "$T/site.conf" -o image_root="$T/$r/images" "${args[@]}" validate "$f" 2>&1) &&
            fail "$r validated with its output directories' mount missing: $out"
        for m in "${site_mounts[@]}"; do
            read -r i id top <<<"$m"
            grep -qF "properties.outputDirectories[$i].pathPrefix: output directory \"$id\" is on \$AZ_BATCHAI_MOUNT_ROOT/$top, which is not mounted on this cluster (no directory $T/$r/mounts/$top;" <<<"$out" ||
                fail "$r: output $id on the missing mount $top not named: $out"
            mkdir -p "$T/$r/mounts/$top"
        done
    fi
    # With them: only the image is left, which is the admins' to stage.
    out=$("$bin" -s "$T/site.conf" -o image_root="$T/$r/images" "${args[@]}" validate "$f" 2>&1) &&
        fail "$r validated with no image staged: $out"
    [ "$(grep -c . <<<"$out")" = 1 ] && grep -q "containerSettings.imageSourceRegistry.image: image .* is not staged" <<<"$out" ||
        fail "$r: with the user's shares, faults other than the image: $out"
    bundle=$(sed -n 's/.*(no OCI bundle at \(.*\)): ask the admins.*/\1/p' <<<"$out")
    [ -n "$bundle" ] || fail "$r: no bundle path in: $out"
    mkdir -p "$bundle" && echo '{}' >"$bundle/config.json"
    out=$("$bin" -s "$T/site.conf" -o image_root="$T/$r/images" "${args[@]}" validate "$f" 2>&1) ||
        fail "$r with the user's shares and a staged image: $out"
    script=$("$bin" -s "$T/site.conf" -o image_root="$T/$r/images" "${args[@]}" translate "$f" 2>&1) ||
        fail "$r: translate: $script"
    for s in "${shares[@]}"; do
        name=${s%% *} rel=${s#* }
        grep -qxF "#   /var/lib/batchai/jobs/%j/mounts/$rel -> $T/$r/$name (azureFileShares \"$name\")" <<<"$script" ||
            fail "$r: the script does not link $rel to the user's $T/$r/$name: $(grep -A4 '^# Mounts' <<<"$script")"
    done
    # The logs go to the user's directory of the share stdOutErrPathPrefix names.
    grep -q "^#SBATCH --output=$T/$r/[a-z]*/" <<<"$script" ||
        fail "$r: the logs are not in the user's directories: $(grep '^#SBATCH --output' <<<"$script")"
    n=$((n + 1))
done
[ "$n" -ge 4 ] || fail "only $n recipes in $recipes"
echo "PASS: $n official recipes validate and translate with the user's own share directories on a default site"
