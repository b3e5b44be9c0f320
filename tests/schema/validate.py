#!/usr/bin/env python3
"""validate.py SCHEMA FILE...: validates each JSON or YAML FILE against SCHEMA with
Debian's python3-jsonschema (and python3-yaml for .yaml/.yml). Prints one line per
file that fails, with the path of the first error, and exits 1 if any failed."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
bad = 0
for path in sys.argv[2:]:
    with open(path) as f:
        if path.endswith((".yaml", ".yml")):
            import yaml
            doc = yaml.safe_load(f)
        else:
            doc = json.load(f)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        bad += 1
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path)
        print(f"{path}: /{where}: {e.message[:300]}")
sys.exit(1 if bad else 0)
