#!/usr/bin/env python3
"""symbolic_graphs.py SEED OUT.yaml: a seeded random fusec-graph/1 whose inputs have
named dims (b, s) with ranges, for `fusec run --dynamic` (tests/cli/t_dynamic.sh).

The graph is one chain over a main tensor [b, s, D]. Each step takes one of: a
unary op, a binary op with a new input broadcast against it (some dims 1), a
reduction kept as a dim of 1 and broadcast back, a matmul by a weight [1, D, E],
a softmax written out, a reshape to [-1, D] and back by name, a permute round trip,
or a cat along s (after which s is no longer a plain name, so new inputs hold 1
there). Values stay small (tanh after growth) so that f32 bounds stay tight."""
import random
import sys

seed, out = int(sys.argv[1]), sys.argv[2]
r = random.Random(seed)
D = r.choice([8, 12, 16])
inputs = {"x": ["b", "s", D]}
ops = []
n = 0


def fresh():
    global n
    n += 1
    return "t%d" % n


def op(line):
    ops.append("  - " + line)


cur, shape = "x", ["b", "s", D]   # a dim is a name, an int, or None (an expression)
for step in range(r.randint(4, 9)):
    k = r.choice(["unary", "binary", "reduce", "matmul", "softmax", "reshape",
                  "permute", "cat"])
    if k == "unary":
        t = fresh()
        op("{op: %s, in: [%s], out: %s}" % (r.choice(["tanh", "sigmoid", "neg", "abs",
                                                      "relu", "sin", "gelu"]), cur, t))
        cur = t
    elif k == "binary":
        name = "in%d" % len(inputs)
        pshape = [d if (d is not None and r.random() < 0.6) else 1 for d in shape]
        inputs[name] = pshape
        t = fresh()
        op("{op: %s, in: [%s, %s], out: %s}" % (r.choice(["add", "sub", "mul", "max"]),
                                                cur, name, t))
        cur = t
    elif k == "reduce":
        ax = r.randrange(len(shape))
        m, t = fresh(), fresh()
        op("{op: %s, in: [%s], axis: %d, out: %s}" % (r.choice(["sum", "mean", "max_dim"]),
                                                      cur, ax, m))
        op("{op: sub, in: [%s, %s], out: %s}" % (cur, m, t))
        t2 = fresh()
        op("{op: tanh, in: [%s], out: %s}" % (t, t2))
        cur = t2
    elif k == "matmul" and len(shape) == 3:
        E = r.choice([4, 8, 24])
        w = "w%d" % len(inputs)
        inputs[w] = [1, shape[2], E]
        t, t2 = fresh(), fresh()
        op("{op: matmul, in: [%s, %s], out: %s}" % (cur, w, t))
        op("{op: tanh, in: [%s], out: %s}" % (t, t2))
        cur, shape = t2, shape[:2] + [E]
    elif k == "softmax":
        m, z, e, se, p = fresh(), fresh(), fresh(), fresh(), fresh()
        ax = r.randrange(len(shape))
        op("{op: max_dim, in: [%s], axis: %d, out: %s}" % (cur, ax, m))
        op("{op: sub, in: [%s, %s], out: %s}" % (cur, m, z))
        op("{op: exp, in: [%s], out: %s}" % (z, e))
        op("{op: sum, in: [%s], axis: %d, out: %s}" % (e, ax, se))
        op("{op: div, in: [%s, %s], out: %s}" % (e, se, p))
        cur = p
    elif k == "reshape" and len(shape) == 3 and shape[0] == "b" and shape[1] == "s":
        f, u = fresh(), fresh()
        op("{op: reshape, in: [%s], out: %s, shape: [-1, %d]}" % (cur, f, shape[2]))
        op("{op: relu, in: [%s], out: %s}" % (f, u))
        t = fresh()
        op("{op: reshape, in: [%s], out: %s, shape: [b, s, %d]}" % (u, t, shape[2]))
        cur = t
    elif k == "permute" and len(shape) == 3:
        p, u, t = fresh(), fresh(), fresh()
        op("{op: permute, in: [%s], out: %s, axes: [1, 2, 0]}" % (cur, p))
        op("{op: abs, in: [%s], out: %s}" % (p, u))
        op("{op: permute, in: [%s], out: %s, axes: [2, 0, 1]}" % (u, t))
        cur = t
    elif k == "cat" and len(shape) == 3:
        t = fresh()
        op("{op: cat, in: [%s, x], axis: 1, out: %s}" % (cur, t)
           if shape == ["b", "s", D] else
           "{op: cat, in: [%s, %s], axis: 1, out: %s}" % (cur, cur, t))
        cur, shape = t, [shape[0], None, shape[2]]
with open(out, "w") as f:
    f.write("format: fusec-graph/1\nname: sym%d\ndims: {b: 1..32, s: 1..64}\ninputs:\n" % seed)
    for name, sh in inputs.items():
        f.write("  %s: {dtype: f32, shape: [%s]}\n" % (name, ", ".join(str(d) for d in sh)))
    f.write("ops:\n" + "\n".join(ops) + "\n")
    f.write("outputs: [%s]\n" % cur)
