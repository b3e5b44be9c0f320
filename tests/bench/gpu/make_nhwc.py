#!/usr/bin/env python3
"""make_nhwc.py: writes the graphs of burn's NHWCRelayout fuser (docs/burn-fidelity.md
row 11): an elementwise trace ending at a pool whose input is at its last use runs as
two launches, the trace writing the pool's input channel-last, then the pool.

    python3 tests/bench/gpu/make_nhwc.py tests/bench/gpu

nhwc_check_f32.json, nhwc_check_bf16.json: the numeric checks (cpu backend in
tests/cli/t_nhwc.sh, the H200 through prepare.sh), one segment per case, odd sizes:
  a  batch norm by channel + relu -> max_pool2d 3x3 stride 2 padding 1, C=5 H=9 W=7
  b  the same trace with a second output (the pre-activation, a graph output,
     written NCHW beside the channel-last one) -> avg_pool2d 3x3 stride 2 padding 1
  c  a pool input that is still read after the pool (ReadOnly): burn does not take
     the pool, ElementWise runs the trace and the pool runs alone, NCHW
  d  avg_pool2d 2x2 stride 1, no padding, on a trace that broadcasts a [1,C,1,1]
     input and grows a [N,1,H,W] one (size-1 dims), C=3 H=11 W=13, N=2
  e  max_pool2d 2x2 stride 2 (even kernel, odd H and W: the last row and column
     fall off), C=33 (one warp and one), batch 3
  f  a pool whose input the trace reads but does not make: NHWCRelayout wins, the
     pool reads NCHW (avg 2x2 stride 2 padding 1)
nhwc_stem_*.json: the timings (tests/bench/gpu, go.sh of the nhwc helper):
  stem_conv_max  [1,3,224,224] conv 7x7 s2 p3 -> bn -> relu -> max_pool2d 3x3 s2 p1
  bn_relu_max    [8,64,112,112] bn -> relu -> max_pool2d 3x3 s2 p1 (no conv: the
                 relayout and the pool alone)
  bn_relu_avg    [8,256,28,28] bn -> relu -> avg_pool2d 2x2 s2 (DenseNet's transition)
  bn_relu_max_bf16  bn_relu_max in bf16
"""
import json
import os
import sys


def t(dtype, shape):
    return {"dtype": dtype, "shape": shape}


def bn_relu(ops, x, s, b, tag):
    ops.append({"op": "mul", "in": [x, s], "out": f"{tag}_n"})
    ops.append({"op": "add", "in": [f"{tag}_n", b], "out": f"{tag}_nb"})
    ops.append({"op": "relu", "in": [f"{tag}_nb"], "out": f"{tag}_r"})
    return f"{tag}_r"


def check_graph(dt):
    inputs, ops, outputs = {}, [], []

    # a: bn + relu -> max 3x3 s2 p1, odd C/H/W
    inputs["a_x"] = t(dt, [2, 5, 9, 7])
    inputs["a_s"] = t(dt, [1, 5, 1, 1])
    inputs["a_b"] = t(dt, [1, 5, 1, 1])
    r = bn_relu(ops, "a_x", "a_s", "a_b", "a")
    ops.append({"op": "max_pool2d", "in": [r], "kernel": [3, 3], "stride": [2, 2],
                "padding": [1, 1], "out": "a_y"})
    outputs.append("a_y")
    ops.append({"op": "sync"})

    # b: a second output of the trace (the pre-activation), avg 3x3 s2 p1
    inputs["b_x"] = t(dt, [1, 7, 10, 9])
    inputs["b_s"] = t(dt, [1, 7, 1, 1])
    inputs["b_b"] = t(dt, [1, 7, 1, 1])
    r = bn_relu(ops, "b_x", "b_s", "b_b", "b")
    ops.append({"op": "avg_pool2d", "in": [r], "kernel": [3, 3], "stride": [2, 2],
                "padding": [1, 1], "out": "b_y"})
    outputs += ["b_nb", "b_y"]
    ops.append({"op": "sync"})

    # c: the pool's input is read again after the pool: not taken
    inputs["c_x"] = t(dt, [1, 6, 8, 8])
    ops.append({"op": "exp", "in": ["c_x"], "out": "c_e"})
    ops.append({"op": "neg", "in": ["c_e"], "out": "c_r"})
    ops.append({"op": "max_pool2d", "in": ["c_r"], "kernel": [2, 2], "out": "c_y"})
    ops.append({"op": "mul_scalar", "in": ["c_r"], "scalar": 0.5, "out": "c_h"})
    outputs += ["c_y", "c_h"]
    ops.append({"op": "sync"})

    # d: broadcast and size-1 growth in the trace, avg 2x2 s1
    inputs["d_x"] = t(dt, [2, 1, 11, 13])
    inputs["d_c"] = t(dt, [1, 3, 1, 1])
    ops.append({"op": "sigmoid", "in": ["d_x"], "out": "d_g"})
    ops.append({"op": "mul", "in": ["d_g", "d_c"], "out": "d_m"})
    ops.append({"op": "avg_pool2d", "in": ["d_m"], "kernel": [2, 2], "stride": [1, 1],
                "out": "d_y"})
    outputs.append("d_y")
    ops.append({"op": "sync"})

    # e: 33 channels, even kernel on odd H/W, batch 3
    inputs["e_x"] = t(dt, [3, 33, 7, 5])
    inputs["e_s"] = t(dt, [1, 33, 1, 1])
    inputs["e_b"] = t(dt, [1, 33, 1, 1])
    r = bn_relu(ops, "e_x", "e_s", "e_b", "e")
    ops.append({"op": "max_pool2d", "in": [r], "kernel": [2, 2], "stride": [2, 2],
                "out": "e_y"})
    outputs.append("e_y")
    ops.append({"op": "sync"})

    # f: the pool's input is not made by the trace (made in the segment before, read
    # by the trace, then pooled at its last use): NHWCRelayout wins (score 100), and
    # the pool reads it NCHW, as burn's relayout then has no output to apply to
    inputs["f_x"] = t(dt, [1, 4, 6, 5])
    ops.append({"op": "abs", "in": ["f_x"], "out": "f_z"})
    ops.append({"op": "sync"})
    ops.append({"op": "add_scalar", "in": ["f_z"], "scalar": 1.0, "out": "f_w"})
    ops.append({"op": "avg_pool2d", "in": ["f_z"], "kernel": [2, 2], "padding": [1, 1],
                "out": "f_y"})
    outputs += ["f_w", "f_y"]
    ops.append({"op": "sync"})
    return {"format": "fusec-graph/1", "name": f"nhwc_check_{dt}", "inputs": inputs,
            "ops": ops, "outputs": outputs}


def bench_graph(name, dt, shape, pool, conv=None):
    inputs, ops = {}, []
    c = shape[1]
    if conv:
        cin, k, s, p = conv
        inputs["image"] = t(dt, [shape[0], cin, shape[2] * s, shape[3] * s])
        inputs["w"] = t(dt, [c, cin, k, k])
        ops.append({"op": "conv2d", "in": ["image", "w"], "stride": [s, s],
                    "padding": [p, p], "out": "x"})
    else:
        inputs["x"] = t(dt, shape)
    inputs["scale"] = t(dt, [1, c, 1, 1])
    inputs["shift"] = t(dt, [1, c, 1, 1])
    r = bn_relu(ops, "x", "scale", "shift", "bn")
    op = dict(pool)
    op["in"] = [r]
    op["out"] = "y"
    ops.append(op)
    ops.append({"op": "sync"})
    return {"format": "fusec-graph/1", "name": name, "inputs": inputs, "ops": ops,
            "outputs": ["y"]}


def main():
    out = sys.argv[1]
    mx = {"op": "max_pool2d", "kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]}
    av = {"op": "avg_pool2d", "kernel": [2, 2], "stride": [2, 2]}
    graphs = [check_graph("f32"), check_graph("bf16"),
              bench_graph("nhwc_stem_conv_max", "f32", [1, 64, 112, 112], mx, (3, 7, 2, 3)),
              bench_graph("nhwc_bn_relu_max", "f32", [8, 64, 112, 112], mx),
              bench_graph("nhwc_bn_relu_avg", "f32", [8, 256, 28, 28], av),
              bench_graph("nhwc_bn_relu_max_bf16", "bf16", [8, 64, 112, 112], mx)]
    for g in graphs:
        with open(os.path.join(out, g["name"] + ".json"), "w") as f:
            json.dump(g, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
