#!/usr/bin/env python3
"""Independent check of grammar-constrained outputs (called by property_test).

Reads JSON lines {"kind": "schema"|"regex"|"choice", ...,"output": str}: a schema
output must parse as JSON and validate (jsonschema, Draft 2020-12, with format
checking); a regex output must re.fullmatch; a choice output must be one of the
choices. Prints one line per failure and a summary; exits 1 on any failure.
"""
import json
import re
import sys

import jsonschema


def openapi_nullable(s):
    """OpenAPI's nullable: true (which we support) as JSON Schema's type union."""
    if isinstance(s, dict):
        s = {k: openapi_nullable(v) for k, v in s.items()}
        if s.pop("nullable", False) and "type" in s:
            t = s["type"] if isinstance(s["type"], list) else [s["type"]]
            s["type"] = t + ["null"] if "null" not in t else t
        return s
    if isinstance(s, list):
        return [openapi_nullable(x) for x in s]
    return s


def check(rec):
    out = rec["output"]
    if rec["kind"] == "schema":
        value = json.loads(out)
        schema = openapi_nullable(rec["schema"])
        jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(value)
    elif rec["kind"] == "regex":
        if re.fullmatch(rec["pattern"], out) is None:
            raise ValueError("no full match")
    elif rec["kind"] == "choice":
        if out not in rec["choices"]:
            raise ValueError("not a choice")
    else:
        raise ValueError("unknown kind " + rec["kind"])


def main():
    total = bad = 0
    with open(sys.argv[1], encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            rec = json.loads(line)
            total += 1
            try:
                check(rec)
            except Exception as e:  # noqa: BLE001 - every failure is reported
                bad += 1
                msg = str(e).splitlines()[0] if str(e) else type(e).__name__
                print(f"FAIL line {n} ({rec['kind']}): {msg}\n  output: {rec['output']!r}")
    print(f"validated {total} outputs, {bad} invalid")
    sys.exit(1 if bad or total == 0 else 0)


if __name__ == "__main__":
    main()
