#!/usr/bin/python3
"""Check Azure ML command jobs against schemas/azureml-command-job.schema.json with independent readers:
python3-yaml (yaml.safe_load) and python3-jsonschema (draft-07).

usage: check_azureml.py SCHEMA VERDICTS REFERENCE_DIR

VERDICTS is tests/jobfiles/azureml/verdicts.txt: one line per job file (found beside VERDICTS, else in
REFERENCE_DIR), its verdict and the field the C validator names. "translates", "unmapped" (refused only for
a site map) and "blind" (a rule no schema can say) files must be accepted; a "refused" file must be rejected
with an error at that field or at a mapping holding it. Prints one line per file and a summary; exit 0 when
every file is as expected, else 1.
"""
import json
import os
import re
import sys

import jsonschema
import yaml


def error_paths(validator, doc):
    """The dotted paths of every error, the errors inside oneOf branches included."""
    out = set()
    stack = list(validator.iter_errors(doc))
    while stack:
        e = stack.pop()
        out.add(".".join(str(p) for p in e.absolute_path))
        stack.extend(e.context or [])
    return out


def main():
    schema_path, verdicts, refs = sys.argv[1:4]
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    here = os.path.dirname(verdicts)
    bad = total = 0
    with open(verdicts) as f:
        lines = [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]
    for parts in lines:
        name, verdict, field = parts[0], parts[1], (parts[2] if len(parts) > 2 else "")
        # The C validator's item paths (names[1]) as jsonschema's (names.1).
        field = re.sub(r"\[(\d+)\]", r".\1", field)
        path = os.path.join(here, name)
        if not os.path.exists(path):
            path = os.path.join(refs, name)
        with open(path) as f:
            doc = yaml.safe_load(f)
        paths = error_paths(validator, doc)
        total += 1
        if verdict in ("translates", "unmapped", "blind"):
            ok = not paths
            why = "accepted" if ok else "rejected at %s" % sorted(paths)
        else:
            # At the field, or at a mapping that holds it (additionalProperties reports the mapping; the
            # document itself for a top-level field).
            ok = any(p == field or field.startswith(p + ".") if p else "." not in field for p in paths)
            why = "rejected at %s" % sorted(paths) if paths else "accepted"
        print("%s %s (%s%s): %s" % ("ok  " if ok else "FAIL", name, verdict, " " + field if field else "", why))
        bad += not ok
    print("azureml schema: %d files, %d as expected, %d not" % (total, total - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
