#!/usr/bin/env python3
"""make_kmajor.py: a bf16 graph whose matmuls read constant weights, for the pass
that stores them K-major (passes/kmajor.c) and the 96-wide wgmma tile it opens
(wg128x96x64s4ws). Written with fixed values (seeded), inline:
    python3 tests/bench/gpu/make_kmajor.py OUT.json [ROWS]
ROWS (default 100) rows a batch of x, three batches. What it holds:
  - y1 = gelu(x w1 + b1): a weight and a bias, both constants (K-major);
  - q = xs wq, k = xs wk: siblings (left as they are: no views in front of them);
  - z = x2 w1: w1 read by a second matmul (a second view of its transpose);
  - y3 = x3 wr, e = 2 wr: wr also read by an elementwise op, which keeps it;
  - s = x4 wo: K = 20, not a multiple of 8 (left as it is);
  - t = x5 w4: 8 rows, under the pass's 64 (left as it is)."""
import json
import random
import struct
import sys


def bf16(v):
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFF0000))[0]


def const(rng, shape, scale):
    n = 1
    for d in shape:
        n *= d
    return {"dtype": "bf16", "shape": shape,
            "data": [bf16(rng.uniform(-scale, scale)) for _ in range(n)]}


def main():
    out = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    rng = random.Random(52)
    k = 136
    g = {
        "format": "fusec-graph/1", "name": "mm_kmajor_bf16",
        "inputs": {"x": {"dtype": "bf16", "shape": [3, rows, k]},
                   "xs": {"dtype": "bf16", "shape": [3, rows, k]},
                   "x2": {"dtype": "bf16", "shape": [1, 64, k]},
                   "x3": {"dtype": "bf16", "shape": [2, rows, k]},
                   "x4": {"dtype": "bf16", "shape": [64, 20]},
                   "x5": {"dtype": "bf16", "shape": [8, 64]}},
        "constants": {"w1": const(rng, [1, k, 200], 0.1), "b1": const(rng, [1, 1, 200], 0.5),
                      "wq": const(rng, [1, k, 96], 0.1), "wk": const(rng, [1, k, 96], 0.1),
                      "wr": const(rng, [1, k, k], 0.1), "wo": const(rng, [20, 40], 0.2),
                      "w4": const(rng, [64, 48], 0.2)},
        "ops": [
            {"op": "matmul", "in": ["x", "w1"], "out": "h1"},
            {"op": "add", "in": ["h1", "b1"], "out": "h2"},
            {"op": "gelu", "in": ["h2"], "out": "y1", "approximate": "tanh"},
            {"op": "matmul", "in": ["xs", "wq"], "out": "q"},
            {"op": "matmul", "in": ["xs", "wk"], "out": "k"},
            {"op": "matmul", "in": ["x2", "w1"], "out": "z"},
            {"op": "matmul", "in": ["x3", "wr"], "out": "y3"},
            {"op": "add", "in": ["wr", "wr"], "out": "e"},
            {"op": "matmul", "in": ["x4", "wo"], "out": "s"},
            {"op": "matmul", "in": ["x5", "w4"], "out": "t"},
        ],
        "outputs": ["y1", "q", "k", "z", "y3", "e", "s", "t"],
    }
    with open(out, "w") as f:
        json.dump(g, f)
        f.write("\n")


main()
