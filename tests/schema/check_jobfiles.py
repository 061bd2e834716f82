#!/usr/bin/python3
"""Check job files against schemas/job.schema.json with an independent validator (python3-jsonschema).

usage: check_jobfiles.py SCHEMA [--valid FILE...] [--invalid FILE...] [--blind FILE...]

Checks the schema itself against the draft-07 metaschema, then every file: a --valid file must be JSON that
the schema accepts; an --invalid file must be rejected. A --blind file is an invalid job whose fault no JSON
Schema can see (a rule between values, such as two mounts at one path): the schema must accept it, so that
the list of such files stays true, and it must still have its .why for the C validator's tests. A file is "not JSON" (and so rejected) when it is
larger than 1 MiB (the C reader's limit, BAI_JOB_MAX_BYTES), not UTF-8, not strict JSON (NaN, Infinity), has
a duplicate key (readers disagree on which one wins), is nested too deeply to parse, or has a string with an
escaped NUL ("\u0000", which would cut a C string short).

Every invalid file has a companion <file>.why: one line, the JSON path at fault as the C validator reports it
(e.g. properties.mountVolumes.azureFileShares[0].relativeMountPath; for a missing or unknown property, that
property's own path), or "(document)" for a fault of the file as a whole. The check
requires the validator to report an error at that path.

Prints one line per file and a summary; exit status 0 when every file is as expected, else 1.
"""
import json
import os
import sys

import jsonschema

MAX_BYTES = 1024 * 1024
DOCUMENT = "(document)"


class NotJson(Exception):
    key = None  # set for a duplicate key: the fault is at that member


def reject_constant(name):
    raise NotJson("not strict JSON: %s" % name)


def no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            e = NotJson("duplicate key %r" % key)
            e.key = key
            raise e
        seen[key] = value
    return seen


def load(path):
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise NotJson("larger than %d bytes" % MAX_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotJson("not UTF-8: %s" % e) from None
    try:
        doc = json.loads(text, parse_constant=reject_constant, object_pairs_hook=no_duplicates)
    except ValueError as e:  # json.JSONDecodeError is a ValueError
        raise NotJson(str(e)) from None
    except RecursionError:
        raise NotJson("nested too deeply") from None
    if has_nul(doc):
        raise NotJson("a string holds an escaped NUL (\\u0000)")
    return doc


def has_nul(value):
    if isinstance(value, str):
        return "\0" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_nul(v) for v in value)
    return False


def json_path(parts):
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += "[%d]" % p
        else:
            out += ("." if out else "") + str(p)
    return out


def all_errors(errors):
    for e in errors:
        yield e
        yield from all_errors(e.context or [])


def error_paths(e):
    """The paths an error stands for: its own, and for a missing or unknown property that property's path
    (jsonschema reports those at the enclosing object)."""
    at = list(e.absolute_path)
    yield json_path(at)
    if e.validator == "required" and isinstance(e.instance, dict):
        for key in e.validator_value:
            if key not in e.instance:
                yield json_path(at + [key])
    elif e.validator == "additionalProperties" and isinstance(e.instance, dict):
        for key in e.instance:
            if key not in e.schema.get("properties", {}):
                yield json_path(at + [key])
    elif "propertyNames" in e.absolute_schema_path and isinstance(e.instance, str):
        yield json_path(at + [e.instance])  # the name that failed propertyNames


def located(why, errors):
    """True when some error (or a sub-error of oneOf/anyOf/if) is at the path `why`."""
    return any(why in error_paths(e) for e in all_errors(errors))


def read_why(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    return lines[0].strip() if lines else ""


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    try:
        jsonschema.Draft7Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        print("FAIL  schema         %s: not a valid draft-07 schema: %s" % (argv[1], e.message))
        return 1
    print("ok    schema         %s (draft-07 metaschema)" % argv[1])
    validator = jsonschema.Draft7Validator(schema)

    expect, ok, bad = None, 0, 0
    for arg in argv[2:]:
        if arg in ("--valid", "--invalid", "--blind"):
            expect = arg[2:]
            continue
        if expect is None:
            print("give --valid or --invalid before %s" % arg, file=sys.stderr)
            return 2
        errors, why_not_json, dup_key = None, None, None
        try:
            doc = load(arg)
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
        except NotJson as e:
            why_not_json, dup_key = str(e), e.key
        except OSError as e:
            why_not_json = "cannot read: %s" % e.strerror
        if why_not_json is not None:
            verdict = "not JSON: " + why_not_json
        elif errors:
            best = jsonschema.exceptions.best_match(errors)
            verdict = "%s: %s" % (json_path(best.absolute_path) or DOCUMENT, best.message)
        else:
            verdict = "valid"
        if len(verdict) > 160:
            verdict = verdict[:157] + "..."

        rejected = why_not_json is not None or bool(errors)
        good = rejected == (expect == "invalid")
        note = ""
        if not good and expect == "blind":
            note = " [the schema rejects it now: move it off the schema-blind list]"
        why = read_why(arg + ".why") if expect != "valid" else None
        if not good or expect == "valid":
            pass
        elif why is None:
            good, note = False, " [no %s.why]" % os.path.basename(arg)
        elif expect == "blind":
            note = " [fault only the C validator sees: %s]" % why
        elif why == DOCUMENT:
            if dup_key is not None or (errors and not located("", errors)):
                good, note = False, " [.why says (document), the fault is elsewhere]"
        elif dup_key is not None:
            if why.rsplit(".", 1)[-1] != dup_key:
                good, note = False, " [.why names %s, the duplicate key is %r]" % (why, dup_key)
        elif why_not_json is not None:
            good, note = False, " [.why names %s, but the file is not JSON]" % why
        elif not located(why, errors):
            good, note = False, " [.why names %s, no error there]" % why
        print("%s  %-7s  %s: %s%s" % ("ok  " if good else "FAIL", expect, arg, verdict, note))
        if good:
            ok += 1
        else:
            bad += 1
    print("%d as expected, %d not" % (ok, bad))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
