#!/usr/bin/env python3
"""make_graphs.py: writes the GPU benchmark graphs G1-G5 (fusec-graph/1, JSON).

G6 (the 12-layer transformer) comes from the C generator in tests/bench/.
Run from this folder: python3 make_graphs.py
"""
import json


def graph(name, inputs, ops, outputs):
    doc = {"format": "fusec-graph/1", "name": name,
           "inputs": {k: {"dtype": d, "shape": s} for k, (d, s) in inputs.items()},
           "ops": ops, "outputs": outputs}
    with open(name + ".json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def op(kind, ins, out, **attrs):
    d = {"op": kind, "in": ins, "out": out}
    d.update(attrs)
    return d


def g1():
    s = [8192, 8192]  # 2^26 elements
    graph("g1_reuse", {"a": ("f32", s), "b": ("f32", s), "c": ("f32", s)},
          [op("mul", ["a", "b"], "t0"), op("mul_scalar", ["c"], "t1", scalar=2.0),
           op("add", ["t0", "t1"], "t2"), op("exp", ["t2"], "y")], ["y"])


def g2(n):
    kinds = ["mul_scalar", "add_scalar", "abs", "neg", "sub_scalar", "exp", "div_scalar", "abs"]
    ins, ops, outs = {}, [], []
    for c in range(5):
        x = "x%d" % c
        ins[x] = ("f32", [n, n])
        cur = x
        for i, k in enumerate(kinds):
            out = "c%d_%d" % (c, i)
            extra = {"scalar": 0.5} if k.endswith("_scalar") else {}
            ops.append(op(k, [cur], out, **extra))
            cur = out
        outs.append(cur)
    ops.append({"op": "sync"})
    graph("g2_chains_%d" % n, ins, ops, outs)


def g3():
    s = [8192, 8192]
    graph("g3_softmax", {"x": ("f32", s)},
          [op("max_dim", ["x"], "m", axis=1), op("sub", ["x", "m"], "d"),
           op("exp", ["d"], "e"), op("sum", ["e"], "s", axis=1), op("div", ["e", "s"], "y")],
          ["y"])


def g4():
    r, c = 16384, 4096
    graph("g4_bias_gelu_layernorm",
          {"x": ("f32", [r, c]), "bias": ("f32", [1, c]), "gamma": ("f32", [1, c]),
           "beta": ("f32", [1, c])},
          [op("add", ["x", "bias"], "h"), op("gelu", ["h"], "g", approximate="tanh"),
           op("mean", ["g"], "mu", axis=1), op("sub", ["g", "mu"], "d"),
           op("mul", ["d", "d"], "d2"), op("mean", ["d2"], "var", axis=1),
           op("add_scalar", ["var"], "ve", scalar=1e-5), op("sqrt", ["ve"], "sd"),
           op("div", ["d", "sd"], "n"), op("mul", ["n", "gamma"], "ng"),
           op("add", ["ng", "beta"], "y")], ["y"])


def g5(dtype):
    n = 8192
    graph("g5_matmul_bias_relu_" + dtype,
          {"a": (dtype, [n, n]), "w": (dtype, [n, n]), "bias": (dtype, [1, n])},
          [op("matmul", ["a", "w"], "m"), op("add", ["m", "bias"], "h"), op("relu", ["h"], "y")],
          ["y"])


if __name__ == "__main__":
    g1()
    g2(256)
    g2(4096)
    g3()
    g4()
    g5("f32")
    g5("bf16")
