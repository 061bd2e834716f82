#!/usr/bin/env bash
# Checks schemas/job.schema.json with an independent validator (Debian's python3-jsonschema, draft-07):
#  - the schema against the draft-07 metaschema;
#  - must validate: every job file in $SHARED_DIR/reference/batchai/recipes/ (default: the repository's
#    sibling ../shared), every job.json / *.job.json under contrib/, every file in tests/jobfiles/valid/;
#  - must be rejected: every file in tests/jobfiles/invalid/ (except the .why companions), each at the JSON
#    path its .why file names; except the files listed in tests/schema/schema-blind.txt, whose faults are
#    rules between values that no JSON Schema can express (the schema must accept those).
# Then schemas/azureml-command-job.schema.json (the Azure ML subset we run) on every file
# tests/jobfiles/azureml/verdicts.txt names, read by python3-yaml (tests/schema/check_azureml.py).
# One line per file, then a summary. Exit 0 pass, 1 fail, 77 when /usr/bin/python3 has no jsonschema or yaml.
# run-tests: parallel
set -u
orphans=0
repo=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
if ! "$PY" -c 'import jsonschema, yaml' 2>/dev/null; then
    echo "SKIP(dep): $PY has no jsonschema or yaml module (Debian: python3-jsonschema, python3-yaml)"
    exit 77
fi
shared=${SHARED_DIR:-$repo/../shared}
recipes=$shared/reference/batchai/recipes
if [ ! -d "$recipes" ]; then
    echo "SKIP(shared): no recipes directory at $recipes (set SHARED_DIR to the shared folder)"
    exit 77
fi

mapfile -d '' valid < <(
    find "$recipes" -maxdepth 1 -type f -name '*.json' -print0 | sort -z
    find "$repo/contrib" -type f \( -name job.json -o -name '*.job.json' \) -print0 | sort -z
    find "$repo/tests/jobfiles/valid" -maxdepth 1 -type f -print0 | sort -z)
mapfile -d '' all_invalid < <(
    find "$repo/tests/jobfiles/invalid" -maxdepth 1 -type f ! -name '*.why' -print0 | sort -z)
blind_list=$repo/tests/schema/schema-blind.txt
invalid=() blind=()
for f in "${all_invalid[@]}"; do
    if grep -qxF "$(basename "$f")" <(sed 's/[[:space:]]*#.*//; /^$/d' "$blind_list"); then
        blind+=("$f")
    else
        invalid+=("$f")
    fi
done
while read -r name; do
    [ -e "$repo/tests/jobfiles/invalid/$name" ] || { echo "FAIL: $blind_list names $name, which is not in tests/jobfiles/invalid/"; orphans=1; }
done < <(sed 's/[[:space:]]*#.*//; /^$/d' "$blind_list")
if [ ${#invalid[@]} -eq 0 ] || [ ${#valid[@]} -eq 0 ]; then
    echo "FAIL: found ${#valid[@]} valid and ${#invalid[@]} invalid files; expected some of each"
    exit 1
fi
# Orphaned .why files mean a renamed or deleted example.
for w in "$repo"/tests/jobfiles/invalid/*.why; do
    [ -e "$w" ] || continue
    if [ ! -e "${w%.why}" ]; then echo "FAIL: $w has no example file"; orphans=1; fi
done

cd "$repo" || exit 1
args=(--valid "${valid[@]#$repo/}" --invalid "${invalid[@]#$repo/}")
[ ${#blind[@]} -eq 0 ] || args+=(--blind "${blind[@]#$repo/}")
"$PY" tests/schema/check_jobfiles.py schemas/job.schema.json "${args[@]}"
rc=$?
"$PY" tests/schema/check_azureml.py schemas/azureml-command-job.schema.json tests/jobfiles/azureml/verdicts.txt \
    "$shared/reference/azureml/jobs" || rc=1
[ $orphans -eq 0 ] || rc=1
exit $rc
