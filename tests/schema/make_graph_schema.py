#!/usr/bin/env python3
"""make_graph_schema.py: writes docs/schema/fusec-graph-1.schema.json from the op
table as `fusec ops --json` prints it (ir/ops.def is the one source of truth).

    python3 tests/schema/make_graph_schema.py build/fusec > docs/schema/fusec-graph-1.schema.json

tests/cli/t_schema.sh regenerates it and fails when the committed file differs."""
import json
import subprocess
import sys

ops = json.loads(subprocess.check_output([sys.argv[1], "ops", "--json"]))["ops"]

DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"]
name = {"type": "string", "minLength": 1, "pattern": "^[^\\u0000-\\u001f\\u007f]+$"}
real = {"oneOf": [{"type": "number"}, {"enum": ["inf", "+inf", "-inf", "nan"]}]}
pair = lambda lo: {"oneOf": [{"type": "integer", "minimum": lo},
                             {"type": "array", "items": {"type": "integer", "minimum": lo},
                              "minItems": 2, "maxItems": 2}]}
attrs = {
    "scalar": real, "min": real, "max": real,
    "dtype": {"$ref": "#/$defs/dtype"},
    "shape": {"type": "array", "items": {"oneOf": [{"type": "integer", "minimum": -1},
                                                   {"$ref": "#/$defs/dim_name"}]},
              "maxItems": 8},
    "axes": {"type": "array", "items": {"type": "integer"}, "maxItems": 8},
    "dims": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
    "ranges": {"type": "array", "maxItems": 8,
               "items": {"type": "array", "items": {"type": "integer"},
                         "minItems": 2, "maxItems": 2}},
    "axis": {"type": "integer", "minimum": -8, "maximum": 7},
    "stride": pair(1), "padding": pair(0), "dilation": pair(1), "kernel": pair(1),
    "groups": {"type": "integer", "minimum": 1},
    "approximate": {"enum": ["none", "tanh"]},
    "layout": {"enum": ["nchw", "nhwc"]},
    "causal": {"type": "integer", "minimum": 0, "maximum": 2147483647},
    "zero_nan": {"type": "boolean"},
}
base = {
    "op": {"enum": [o["op"] for o in ops]},
    "in": {"type": "array", "items": {"$ref": "#/$defs/name"}},
    "out": {"oneOf": [{"$ref": "#/$defs/name"},
                      {"type": "array", "items": {"$ref": "#/$defs/name"},
                       "minItems": 1, "maxItems": 1}]},
    "stream": {"type": "integer", "minimum": 0},
    "name": {"$ref": "#/$defs/name",
             "description": "the op's own name (an ONNX node name); shown in logs"},
}
rules = []
for o in ops:
    allowed = set(o["required"]) | set(o["optional"])
    then = {"required": list(o["required"]) + (["out"] if o["op"] != "sync" else [])}
    if o["inputs_max"] != 0:
        then["required"].append("in")
        inp = {"minItems": o["inputs_min"]}
        if o["inputs_max"] is not None:
            inp["maxItems"] = o["inputs_max"]
        then["properties"] = {"in": inp}
    else:
        then["not"] = {"anyOf": [{"required": ["in"]}, {"required": ["out"]}]}
    # dtype and shape are output statements where they are not attributes
    forbidden = [a for a in attrs if a not in allowed and a not in ("dtype", "shape")]
    if o["op"] == "sync":
        forbidden += ["dtype", "shape"]
    if forbidden:
        then.setdefault("allOf", []).append(
            {"not": {"anyOf": [{"required": [a]} for a in forbidden]}})
    rules.append({"if": {"properties": {"op": {"const": o["op"]}}, "required": ["op"]},
                  "then": then})

schema = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://fusec.dev/schema/fusec-graph-1.schema.json",
    "title": "fusec-graph/1",
    "description": "A fusec op graph (JSON or YAML). Generated from ir/ops.def by "
                   "tests/schema/make_graph_schema.py; fusec's own checks (shapes, "
                   "dtypes, names defined before use) go further.",
    "type": "object",
    "required": ["format", "inputs", "ops", "outputs"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": "fusec-graph/1"},
        "name": {"type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9_.-]*$"},
        "inputs": {"type": "object", "additionalProperties": {"$ref": "#/$defs/tensor"}},
        "constants": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["dtype", "shape"],
            "properties": {"dtype": {"$ref": "#/$defs/dtype"}, "shape": {"$ref": "#/$defs/shape"},
                           "data": {"type": "array"}, "npy": {"type": "string"}}}},
        "ops": {"type": "array", "items": {"$ref": "#/$defs/op"}},
        "outputs": {"type": "array", "items": {"$ref": "#/$defs/name"}, "uniqueItems": True},
        "dims": {"type": "object", "propertyNames": {"$ref": "#/$defs/dim_name"},
                 "additionalProperties": {"oneOf": [
                     {"type": "integer", "minimum": 1},
                     {"type": "string", "pattern": "^[0-9]+\\.\\.[0-9]+$"}]}},
    },
    "$defs": {
        "name": name,
        "dtype": {"enum": DTYPES},
        "dim_name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        "shape": {"type": "array", "items": {"oneOf": [{"type": "integer", "minimum": 1},
                                                       {"$ref": "#/$defs/dim_name"}]},
                  "maxItems": 8},
        "tensor": {"type": "object", "required": ["dtype", "shape"], "additionalProperties": False,
                   "properties": {"dtype": {"$ref": "#/$defs/dtype"},
                                  "shape": {"$ref": "#/$defs/shape"}}},
        "op": {"type": "object", "required": ["op"], "additionalProperties": False,
               "properties": dict(base, **attrs), "allOf": rules},
    },
}
json.dump(schema, sys.stdout, indent=1, sort_keys=False)
sys.stdout.write("\n")
