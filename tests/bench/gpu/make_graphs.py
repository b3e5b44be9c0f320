#!/usr/bin/env python3
"""make_graphs.py: writes the GPU benchmark graphs G1-G5 and G7-G13 (fusec-graph/1, JSON).

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


def g7():
    """RMSNorm at LLM size: bf16 in and out, f32 math inside the kernel."""
    r, c = 16384, 4096
    graph("g7_rmsnorm_bf16", {"x": ("bf16", [r, c]), "w": ("bf16", [1, c])},
          [op("mul", ["x", "x"], "x2"), op("mean", ["x2"], "ms", axis=1),
           op("add_scalar", ["ms"], "me", scalar=1e-6), op("sqrt", ["me"], "rms"),
           op("div", ["x", "rms"], "n"), op("mul", ["n", "w"], "y")], ["y"])


def g8():
    """The 5-op softmax of G3 in bf16 at LLM size."""
    s = [16384, 4096]
    graph("g8_softmax_bf16", {"x": ("bf16", s)},
          [op("max_dim", ["x"], "m", axis=1), op("sub", ["x", "m"], "d"),
           op("exp", ["d"], "e"), op("sum", ["e"], "s", axis=1), op("div", ["e", "s"], "y")],
          ["y"])


def g9():
    """A column sum of a large f32 matrix (reduction over axis 0)."""
    graph("g9_colsum", {"x": ("f32", [16384, 4096])}, [op("sum", ["x"], "y", axis=0)], ["y"])


def g10():
    """A full sum of 2^26 f32 values (one row, split across blocks)."""
    graph("g10_fullsum", {"x": ("f32", [1 << 26])}, [op("sum", ["x"], "y", axis=0)], ["y"])


def g11():
    """An elementwise chain with transcendental math over a 1 GiB f32 tensor."""
    graph("g11_sigmoid_tanh", {"x": ("f32", [16384, 16384])},
          [op("sigmoid", ["x"], "s"), op("tanh", ["x"], "t"), op("mul", ["s", "t"], "y")],
          ["y"])


def softmax_at(name, shape):
    """G3's five-op softmax at another shape (the launch rule away from 8192)."""
    graph(name, {"x": ("f32", shape)},
          [op("max_dim", ["x"], "m", axis=1), op("sub", ["x", "m"], "d"),
           op("exp", ["d"], "e"), op("sum", ["e"], "s", axis=1), op("div", ["e", "s"], "y")],
          ["y"])


def reduce_cache():
    """ReduceBroadcasted chains whose rows stay in shared memory between passes (the
    row cache), at sizes around its rule, and one past it (GPU numeric check)."""
    ins, ops, outs = {}, [], []

    def o(kind, i, out, keep=False, **kw):
        ops.append(op(kind, i, out, **kw))
        if keep:
            outs.append(out)
    for dt, shape in [("f32", [37, 4096]), ("f32", [300, 264]), ("f16", [9, 1000]),
                      ("f32", [3, 8192]), ("f32", [2, 12288]), ("bf16", [5, 520]),
                      ("f32", [3, 32768]), ("f32", [2, 40000]), ("bf16", [2, 65536]),
                      ("f16", [3, 20000])]:
        s = "sm_%s_%d_%d" % (dt, shape[0], shape[1])
        ins[s] = (dt, shape)
        o("max_dim", [s], s + "m", axis=1)
        o("sub", [s, s + "m"], s + "d")
        o("exp", [s + "d"], s + "e")
        o("sum", [s + "e"], s + "s", axis=1)
        o("div", [s + "e", s + "s"], s + "_y", keep=True)
    # layer norm with gamma and beta (broadcast over rows: read, not cached), bf16
    ins["ln"], ins["gamma"], ins["beta"] = ("bf16", [33, 2056]), ("bf16", [1, 2056]), ("bf16", [1, 2056])
    o("mean", ["ln"], "lnmu", axis=1)
    o("sub", ["ln", "lnmu"], "lnd")
    o("mul", ["lnd", "lnd"], "lnd2")
    o("mean", ["lnd2"], "lnvar", axis=1)
    o("add_scalar", ["lnvar"], "lnve", scalar=1e-5)
    o("sqrt", ["lnve"], "lnsd")
    o("div", ["lnd", "lnsd"], "lnn")
    o("mul", ["lnn", "gamma"], "lng")
    o("add", ["lng", "beta"], "ln_y", keep=True)
    # RMSNorm of two row tensors' sum (two cached tensors), f32
    ins["ra"], ins["rb"] = ("f32", [17, 3072]), ("f32", [17, 3072])
    o("add", ["ra", "rb"], "rs")
    o("mul", ["rs", "rs"], "rs2")
    o("mean", ["rs2"], "rms", axis=1)
    o("add_scalar", ["rms"], "rmse", scalar=1e-6)
    o("sqrt", ["rmse"], "rmsd")
    o("div", ["rs", "rmsd"], "rms_y", keep=True)
    # the same at rows of 16384 f32: the sum kept in the dynamic row cache, 64 KiB
    ins["la"], ins["lb"] = ("f32", [5, 16384]), ("f32", [5, 16384])
    o("add", ["la", "lb"], "ls")
    o("mul", ["ls", "ls"], "ls2")
    o("mean", ["ls2"], "lms", axis=1)
    o("add_scalar", ["lms"], "lmse", scalar=1e-6)
    o("sqrt", ["lmse"], "lmsd")
    o("div", ["ls", "lmsd"], "lms_y", keep=True)
    # GPT-2's layer norm at batch 1: a residual sum kept as an output, then its
    # norm, 128 rows of 768 bf16 (few rows: a block a row, 128 threads)
    ins["ga"], ins["gb"] = ("bf16", [128, 768]), ("bf16", [128, 768])
    ins["gg"], ins["gbeta"] = ("bf16", [1, 768]), ("bf16", [1, 768])
    o("add", ["ga", "gb"], "gres", keep=True)
    o("mean", ["gres"], "gmu", axis=1)
    o("sub", ["gres", "gmu"], "gd")
    o("mul", ["gd", "gd"], "gd2")
    o("mean", ["gd2"], "gvar", axis=1)
    o("add_scalar", ["gvar"], "gve", scalar=1e-5)
    o("sqrt", ["gve"], "gsd")
    o("div", ["gd", "gsd"], "gn")
    o("mul", ["gn", "gg"], "gng")
    o("add", ["gng", "gbeta"], "gln_y", keep=True)
    graph("reduce_cache", ins, ops, outs)


def reduce_odd():
    """Cooperative reduce kernels at odd sizes, every result an output: the GPU numeric
    check of rows (warp, block, several rows a block), columns, split rows and
    columns, ReduceBroadcasted chains, each reduction op and dtype (not timed)."""
    ins, ops, outs = {}, [], []

    def o(kind, i, out, keep=True, **kw):
        ops.append(op(kind, i, out, **kw))
        if keep:
            outs.append(out)
    for dt, shape in [("f32", [37, 4097]), ("f16", [31, 127]), ("bf16", [33, 31]),
                      ("f64", [5, 1000]), ("i32", [3, 70000]), ("f32", [1, 300000])]:
        x = "x_%s_%d" % (dt, shape[1])
        ins[x] = (dt, shape)
        for k in ["sum", "max_dim", "min_dim", "argmax", "argmin"] + \
                 ([] if dt.startswith("i") else ["mean"]):
            o(k, [x], "%s_%s_r" % (k, x), axis=1)
        o(k, [x], "%s_%s_c" % (k, x), axis=0)
    ins["p"] = ("f32", [6, 9])
    o("prod", ["p"], "prod_r", axis=1)
    # columns split over blocks, and a layer norm and softmax along each axis
    ins["tall"] = ("f32", [40000, 5])
    o("sum", ["tall"], "tall_sum", axis=0)
    o("argmax", ["tall"], "tall_argmax", axis=0)
    for ax in [0, 1]:
        ins["s%d" % ax] = ("f32", [129, 65])
        s = "s%d" % ax
        o("max_dim", [s], s + "m", keep=False, axis=ax)
        o("sub", [s, s + "m"], s + "d", keep=False)
        o("exp", [s + "d"], s + "e", keep=False)
        o("sum", [s + "e"], s + "s", keep=False, axis=ax)
        o("div", [s + "e", s + "s"], s + "_softmax")
    ins["ln"] = ("bf16", [7, 2049])
    o("mean", ["ln"], "lnmu", axis=1)
    o("sub", ["ln", "lnmu"], "lnd", keep=False)
    o("mul", ["lnd", "lnd"], "lnd2", keep=False)
    o("mean", ["lnd2"], "lnvar", keep=False, axis=1)
    o("add_scalar", ["lnvar"], "lnve", keep=False, scalar=1e-5)
    o("sqrt", ["lnve"], "lnsd", keep=False)
    o("div", ["lnd", "lnsd"], "ln_y")
    graph("reduce_odd", ins, ops, outs)


def reduce_fixed():
    """Reduce kernels built for their row length and block (a plan of concrete sizes:
    few rows, or at most two 16-byte groups of a row a thread), each with the guard
    that traps at another geometry: the GPU numeric check of the fixed kernels, odd
    lengths and every float dtype among them (not timed)."""
    ins, ops, outs = {}, [], []

    def o(kind, i, out, keep=False, **kw):
        ops.append(op(kind, i, out, **kw))
        if keep:
            outs.append(out)

    def layer_norm(nm, dt, rows, n, residual):
        x = nm + "_a"
        ins[x] = (dt, [rows, n])
        if residual:
            ins[nm + "_b"] = (dt, [rows, n])
            o("add", [x, nm + "_b"], nm + "_res", keep=True)
            x = nm + "_res"
        ins[nm + "_g"], ins[nm + "_beta"] = (dt, [1, n]), (dt, [1, n])
        o("mean", [x], nm + "_mu", axis=1)
        o("sub", [x, nm + "_mu"], nm + "_d")
        o("mul", [nm + "_d", nm + "_d"], nm + "_d2")
        o("mean", [nm + "_d2"], nm + "_var", axis=1)
        o("add_scalar", [nm + "_var"], nm + "_ve", scalar=1e-5)
        o("sqrt", [nm + "_ve"], nm + "_sd")
        o("div", [nm + "_d", nm + "_sd"], nm + "_n")
        o("mul", [nm + "_n", nm + "_g"], nm + "_ng")
        o("add", [nm + "_ng", nm + "_beta"], nm + "_y", keep=True)

    def rms_norm(nm, rows, n):
        """Llama's: bf16 in and out, f32 within"""
        ins[nm + "_x"], ins[nm + "_w"] = ("bf16", [rows, n]), ("bf16", [1, n])
        o("cast", [nm + "_x"], nm + "_xf", dtype="f32")
        o("mul", [nm + "_xf", nm + "_xf"], nm + "_sq")
        o("mean", [nm + "_sq"], nm + "_ms", axis=1)
        o("add_scalar", [nm + "_ms"], nm + "_mse", scalar=1e-6)
        o("sqrt", [nm + "_mse"], nm + "_r")
        o("div", [nm + "_xf", nm + "_r"], nm + "_xn")
        o("cast", [nm + "_xn"], nm + "_xb", dtype="bf16")
        o("mul", [nm + "_xb", nm + "_w"], nm + "_y", keep=True)

    def softmax(nm, dt, shape, mask):
        x = nm + "_x"
        ins[x] = (dt, shape)
        if mask:
            ins[nm + "_m"] = (dt, [1] * (len(shape) - 1) + [shape[-1]])
            o("add", [x, nm + "_m"], nm + "_s")
            x = nm + "_s"
        ax = len(shape) - 1
        o("max_dim", [x], nm + "_mx", axis=ax)
        o("sub", [x, nm + "_mx"], nm + "_d")
        o("exp", [nm + "_d"], nm + "_e")
        o("sum", [nm + "_e"], nm + "_z", axis=ax)
        o("div", [nm + "_e", nm + "_z"], nm + "_y", keep=True)
    # the transformers' norms at batch 1 (128 and 197 rows), odd lengths, f16, tiny
    layer_norm("ln_bf16_128_768", "bf16", 128, 768, True)
    layer_norm("ln_f32_128_768", "f32", 128, 768, True)
    layer_norm("ln_f32_197_768", "f32", 197, 768, False)
    layer_norm("ln_bf16_128_777", "bf16", 128, 777, True)
    layer_norm("ln_f16_100_1000", "f16", 100, 1000, True)
    layer_norm("ln_f32_3_40", "f32", 3, 40, False)
    rms_norm("rms_128_768", 128, 768)
    rms_norm("rms_64_2048", 64, 2048)
    # rows enough for a wave: a warp a row, eight rows a block, one group a thread
    softmax("sm_bf16_1536_256", "bf16", [1, 12, 128, 256], True)
    softmax("sm_f32_2364_197", "f32", [1, 12, 197, 197], False)
    softmax("sm_f32_12_4096", "f32", [12, 4096], False)
    graph("reduce_fixed", ins, ops, outs)


if __name__ == "__main__":
    reduce_odd()
    reduce_cache()
    reduce_fixed()
    g7()
    g8()
    g9()
    g10()
    g11()
    softmax_at("g12_softmax_1000", [65536, 1000])
    softmax_at("g13_softmax_16384", [4096, 16384])
    softmax_at("g21_softmax_32768", [2048, 32768])
    g1()
    g2(256)
    g2(4096)
    g3()
    g4()
    g5("f32")
    g5("bf16")


def allops(dt):
    """Every op of the table on small shapes, each result a graph output: the GPU
    numeric check of the code generator (not timed). dt: a float dtype."""
    ins = {"x": (dt, [64, 96]), "y": (dt, [64, 96]), "z": (dt, [1, 96]), "w": (dt, [96, 32]),
           "img": (dt, [2, 4, 12, 12]), "k": (dt, [6, 4, 3, 3]), "kb": (dt, [6])}
    ops, outs = [], []

    def o(kind, i, out, **kw):
        ops.append(op(kind, i, out, **kw))
        outs.append(out)
    ops.append(op("abs", ["x"], "xa"))
    ops.append(op("add_scalar", ["xa"], "ax", scalar=0.5))
    for k in ["add", "sub", "mul", "max", "min"]:
        o(k, ["x", "z"], k + "_b")
    o("div", ["x", "ax"], "div_t")
    o("rem", ["x", "ax"], "rem_t")
    o("pow", ["ax", "y"], "pow_t")
    o("powf", ["ax", "z"], "powf_t")
    for k, s in [("add_scalar", 1.5), ("sub_scalar", -2.0), ("mul_scalar", 3.0),
                 ("div_scalar", 7.0), ("rem_scalar", 0.3)]:
        o(k, ["x"], k + "_t", scalar=s)
    o("pow_scalar", ["ax"], "pows_t", scalar=2.5)
    o("clamp", ["x"], "clamp_t", min=-0.5, max=0.25)
    o("clamp_min", ["x"], "clampmin_t", min=-0.1)
    o("clamp_max", ["x"], "clampmax_t", max=0.1)
    for k in ["eq", "ne", "lt", "le", "gt", "ge"]:
        o(k, ["x", "z"], k + "_t")
        o(k + "_scalar", ["x"], k + "s_t", scalar=0.0)
    for k in ["neg", "abs", "sign", "exp", "sin", "cos", "tanh", "erf", "floor", "ceil",
              "round", "trunc", "relu", "sigmoid", "silu", "gelu"]:
        o(k, ["x"], k + "_u")
    for k in ["log", "log1p", "sqrt", "recip"]:
        o(k, ["ax"], k + "_u")
    o("div", ["x", "xa"], "nanmaker")
    o("is_nan", ["nanmaker"], "isnan_u")
    o("div_scalar", ["x"], "infmaker", scalar=0.0)
    o("is_inf", ["infmaker"], "isinf_u")
    o("gelu", ["x"], "gelut_u", approximate="tanh")
    o("and", ["lt_t", "gts_t"], "and_t")
    o("or", ["lt_t", "gts_t"], "or_t")
    o("xor", ["lt_t", "gts_t"], "xor_t")
    o("not", ["lt_t"], "not_t")
    o("where", ["lt_t", "x", "y"], "where_t")
    o("mask_fill", ["x", "gt_t"], "maskfill_t", scalar=-9.0)
    o("cast", ["x"], "cast_f16", dtype="f16")
    o("cast", ["mul_scalar_t"], "cast_i32", dtype="i32")
    o("reshape", ["x"], "reshape_t", shape=[96, 64])
    ops.append(op("permute", ["y"], "perm", axes=[1, 0]))
    o("add_scalar", ["perm"], "permute_t", scalar=1.0)
    ops.append(op("swap_dims", ["x"], "sw", dims=[0, 1]))
    o("mul_scalar", ["sw"], "swap_t", scalar=2.0)
    o("expand", ["z"], "expand_t", shape=[64, 96])
    o("slice", ["x"], "slice_t", ranges=[[4, 20], [8, 40]])
    for k in ["sum", "mean", "max_dim", "min_dim", "argmax", "argmin"]:
        o(k, ["x"], k + "_r", axis=1)
        o(k, ["y"], k + "_r0", axis=0)
    o("mul_scalar", ["ax"], "axh", scalar=0.9)
    o("prod", ["z"], "prod_r", axis=1)
    o("matmul", ["x", "w"], "matmul_t")
    o("cat", ["x", "y"], "cat_t", axis=0)
    o("gather", ["x", "argmax_r"], "gather_t", axis=1)
    o("conv2d", ["img", "k", "kb"], "conv_t", padding=1)
    o("max_pool2d", ["img"], "maxpool_t", kernel=2)
    o("avg_pool2d", ["img"], "avgpool_t", kernel=3, stride=2, padding=1)
    graph("allops_" + dt, ins, ops, outs)


def allops_int(dt):
    ins = {"a": (dt, [32, 48]), "b": (dt, [32, 48]), "c": (dt, [1, 48])}
    ops, outs = [], []

    def o(kind, i, out, **kw):
        ops.append(op(kind, i, out, **kw))
        outs.append(out)
    for k in ["add", "sub", "mul", "div", "rem", "max", "min"]:
        o(k, ["a", "c"], k + "_b")
    for k in ["add_scalar", "mul_scalar", "div_scalar", "rem_scalar"]:
        o(k, ["a"], k + "_s", scalar=3)
    o("neg", ["a"], "neg_u")
    o("abs", ["a"], "abs_u")
    o("sign", ["a"], "sign_u")
    o("clamp", ["a"], "clamp_t", min=-2, max=3)
    for k in ["eq", "lt", "ge"]:
        o(k, ["a", "b"], k + "_t")
    o("where", ["lt_t", "a", "b"], "where_t")
    o("cast", ["a"], "cast_f32", dtype="f32")
    for k in ["sum", "max_dim", "min_dim", "argmax"]:
        o(k, ["a"], k + "_r", axis=1)
    o("matmul", ["a", "mm"], "matmul_t")
    ins["mm"] = (dt, [48, 16])
    graph("allops_" + dt, ins, ops, outs)


if __name__ == "__main__":
    for t in ["f32", "f16", "bf16", "f64"]:
        allops(t)
    allops_int("i32")
    allops_int("i64")


def math_sweep():
    """f32 math on the GPU over a wide sweep, checked by math_sweep.py."""
    n = 1 << 24
    ins = {"x": ("f32", [n])}
    ops = [op("exp", ["x"], "exp"), op("tanh", ["x"], "tanh"), op("sigmoid", ["x"], "sigmoid"),
           op("silu", ["x"], "silu"), op("gelu", ["x"], "gelu_tanh", approximate="tanh"),
           op("sin", ["x"], "sin"), op("log", ["x"], "log"), op("erf", ["x"], "erf")]
    graph("math_sweep", ins, ops, ["exp", "tanh", "sigmoid", "silu", "gelu_tanh", "sin", "log", "erf"])


if __name__ == "__main__":
    math_sweep()


def g7():
    """Memory-bound matmul: M = N = 8192, K = 256, bf16, bias + gelu epilogue."""
    m, k = 8192, 256
    graph("g7_matmul_k256_bias_gelu_bf16",
          {"a": ("bf16", [m, k]), "w": ("bf16", [k, m]), "bias": ("bf16", [1, m])},
          [op("matmul", ["a", "w"], "mm"), op("add", ["mm", "bias"], "h"),
           op("gelu", ["h"], "y")], ["y"])


def g8():
    """Attention-shaped batched matmuls, f16: 16 heads, 1024 x 1024 scores, head
    dim 64, scale and softmax between them (k arrives transposed: [16, 64, 1024])."""
    h, s, d = 16, 1024, 64
    graph("g8_attention_f16",
          {"q": ("f16", [h, s, d]), "kt": ("f16", [h, d, s]), "v": ("f16", [h, s, d])},
          [op("matmul", ["q", "kt"], "sc"), op("mul_scalar", ["sc"], "ss", scalar=0.125),
           op("max_dim", ["ss"], "mx", axis=2), op("sub", ["ss", "mx"], "dd"),
           op("exp", ["dd"], "e"), op("sum", ["e"], "se", axis=2), op("div", ["e", "se"], "p"),
           op("matmul", ["p", "v"], "y")], ["y"])


def mm_check(dt):
    """The GPU numeric check of the tiled matmul: per dtype, one matmul chain per
    tile configuration of codegen/matmul_tiled.c and per chunk path (K and N
    multiples of 8 elements, or not), with edges in M, N and K, batch dims broadcast
    on both sides, and epilogues."""
    ins, ops, outs = {}, [], []
    # (name, batch a, batch b, M, N, K): 36 batches x 2 x 2 = 144 tiles of 128, so the
    # large tiles (the second tile row and column almost empty: edges)
    cases = [("big_fast", [6, 1], [1, 6], 129, 136, 72), ("big_odd", [6, 1], [1, 6], 130, 131, 71),
             ("small_fast", [2, 1], [1, 3], 100, 88, 40), ("small_odd", [2, 1], [1, 3], 33, 65, 17),
             ("gemv", [], [], 1, 300, 136)]
    for name, ba, bb, m, n, k in cases:
        r = max(len(ba), len(bb)) + 2
        ins[name + "_a"] = (dt, ba + [m, k])
        ins[name + "_b"] = (dt, bb + [k, n])
        ins[name + "_bias"] = (dt, [1] * (r - 1) + [n])
        ops.append(op("matmul", [name + "_a", name + "_b"], name + "_mm"))
        ops.append(op("add", [name + "_mm", name + "_bias"], name + "_h"))
        ops.append(op("gelu", [name + "_h"], name + "_y", approximate="tanh"))
        outs.append(name + "_y")
    graph("mm_check_" + dt, ins, ops, outs)


def mm_check_long(dt):
    """The GPU check of the long-K configuration (tc128x256x32s4: a wave of 128x256
    tiles, K >= 2048): 12 x 11 broadcast batches of small matrices (132 tiles, each
    mostly edge), K a multiple of 8 (cp.async) or not (element copies), with a bias
    and gelu (erf form, then tanh form) epilogue."""
    ins, ops, outs = {}, [], []
    cases = [("long_fast", 40, 72, 2056, "none"), ("long_odd", 33, 65, 2049, "tanh")]
    for name, m, n, k, approx in cases:
        ins[name + "_a"] = (dt, [12, 1, m, k])
        ins[name + "_b"] = (dt, [1, 11, k, n])
        ins[name + "_bias"] = (dt, [1, 1, 1, n])
        ops.append(op("matmul", [name + "_a", name + "_b"], name + "_mm"))
        ops.append(op("add", [name + "_mm", name + "_bias"], name + "_h"))
        if approx == "none":
            ops.append(op("gelu", [name + "_h"], name + "_y"))
        else:
            ops.append(op("gelu", [name + "_h"], name + "_y", approximate=approx))
        outs.append(name + "_y")
    graph("mm_check_long_" + dt, ins, ops, outs)


def mm_check_views(dt, name):
    """The GPU check of operands read through views and of tiny M: per case a matmul
    whose a and/or b arrive through swap_dims (stored transposed: ldmatrix with the
    other .trans, or element fragments for tf32) or permute (a batch dim between
    the rows and the columns), with and without 16-byte rows (cp.async or element
    copies), large tiles (144 tiles) and small, and the gemv configuration (M <= 16),
    each with a bias + gelu epilogue. `name` mm_check_tf32 is compiled with
    --allow-tf32 (prepare.sh)."""
    ins, ops, outs = {}, [], []
    # (name, batch a, batch b, M, N, K, a view, b view): view "t" swap_dims of the
    # transposed operand, "p" permute (a: [b0, m, b1, k]; b: [b0, b1, n, k])
    cases = [("at_big", [6, 1], [1, 6], 136, 136, 64, "t", ""),
             ("bt_big", [6, 1], [1, 6], 129, 136, 72, "", "t"),
             ("abt_odd", [2, 1], [1, 3], 33, 65, 17, "t", "t"),
             ("abt_fast", [2, 1], [1, 3], 64, 96, 48, "t", "t"),
             ("perm", [2, 1], [1, 3], 100, 88, 40, "p", "p"),
             ("gemv_bt", [], [], 1, 300, 136, "", "t"),
             ("gemv16", [2, 1], [1, 3], 16, 130, 71, "", ""),
             ("gemv_at", [], [], 9, 64, 33, "t", "")]
    for cn, ba, bb, m, n, k, va, vb in cases:
        nb = len(ba)
        r = nb + 2
        sa, sb = ba + [m, k], bb + [k, n]
        if va == "t":
            sa = ba + [k, m]
        if vb == "t":
            sb = bb + [n, k]
        if va == "p":
            sa = [ba[0], m, ba[1], k]
        if vb == "p":
            sb = [bb[0], bb[1], n, k]
        ins[cn + "_a"] = (dt, sa)
        ins[cn + "_b"] = (dt, sb)
        ins[cn + "_bias"] = (dt, [1] * (r - 1) + [n])
        a, b = cn + "_a", cn + "_b"
        if va == "t":
            ops.append(op("swap_dims", [a], cn + "_av", dims=[nb, nb + 1]))
        if va == "p":
            ops.append(op("permute", [a], cn + "_av", axes=[0, 2, 1, 3]))
        if vb == "t":
            ops.append(op("swap_dims", [b], cn + "_bv", dims=[nb, nb + 1]))
        if vb == "p":
            ops.append(op("permute", [b], cn + "_bv", axes=[0, 1, 3, 2]))
        a = cn + "_av" if va else a
        b = cn + "_bv" if vb else b
        ops.append(op("matmul", [a, b], cn + "_mm"))
        ops.append(op("add", [cn + "_mm", cn + "_bias"], cn + "_h"))
        ops.append(op("gelu", [cn + "_h"], cn + "_y", approximate="tanh"))
        outs.append(cn + "_y")
        # each case its own segment: fused as it would be alone (the search's
        # block limit would otherwise split a view from its matmul)
        ops.append({"op": "sync"})
    graph(name, ins, ops, outs)


if __name__ == "__main__":
    g7()
    g8()
    for t in ["bf16", "f16", "f32"]:
        mm_check(t)
        mm_check_views(t, "mm_check_views_" + t)
    mm_check_views("f32", "mm_check_tf32")
    for t in ["bf16", "f16"]:
        mm_check_long(t)


def mm_case(ins, ops, outs, dt, cn, ba, bb, m, n, k, at, bt, epi):
    """One matmul case of a check graph: a (stored transposed when at) times b
    (likewise bt) with broadcast batches, a bias, then gelu (tanh) or a residual
    add, and a sync after it (each case its own segment)."""
    nb = len(ba)
    r = nb + 2
    ins[cn + "_a"] = (dt, ba + ([k, m] if at else [m, k]))
    ins[cn + "_b"] = (dt, bb + ([n, k] if bt else [k, n]))
    ins[cn + "_bias"] = (dt, [1] * (r - 1) + [n])
    a, b = cn + "_a", cn + "_b"
    if at:
        ops.append(op("swap_dims", [a], cn + "_av", dims=[nb, nb + 1]))
        a = cn + "_av"
    if bt:
        ops.append(op("swap_dims", [b], cn + "_bv", dims=[nb, nb + 1]))
        b = cn + "_bv"
    ops.append(op("matmul", [a, b], cn + "_mm"))
    ops.append(op("add", [cn + "_mm", cn + "_bias"], cn + "_h"))
    if epi == "gelu":
        ops.append(op("gelu", [cn + "_h"], cn + "_y", approximate="tanh"))
    else:
        ins[cn + "_res"] = (dt, [max(x, y) for x, y in zip(ba, bb)] + [m, n])
        ops.append(op("add", [cn + "_h", cn + "_res"], cn + "_y"))
    outs.append(cn + "_y")
    ops.append({"op": "sync"})


def mm_check_split(dt):
    """The GPU check of split-K (outputs under a wave of tiles; checked under every
    split configuration forced with FUSEC_MATMUL_TILES, docs/benchmarks.md "Matmul
    under a wave"): K not a multiple of the tile's BK nor of the split (777), K
    shorter than the splits (40: empty splits), 16-byte rows or not, broadcast
    batches, a transposed operand, and bias + gelu or bias + residual epilogues."""
    ins, ops, outs = {}, [], []
    # (name, batch a, batch b, M, N, K, a transposed, epilogue)
    cases = [("odd", [], [], 100, 131, 777, False, "gelu"),
             ("fast", [], [], 128, 192, 1024, False, "residual"),
             ("batch", [2, 1], [1, 3], 65, 72, 520, False, "gelu"),
             ("short", [], [], 70, 70, 40, False, "residual"),
             ("at", [], [], 64, 96, 600, True, "gelu")]
    for cn, ba, bb, m, n, k, at, epi in cases:
        mm_case(ins, ops, outs, dt, cn, ba, bb, m, n, k, at, False, epi)
    graph("mm_check_split_" + dt, ins, ops, outs)


if __name__ == "__main__":
    for t in ["f32", "bf16"]:
        mm_check_split(t)


def mm_check_gemv(dt):
    """The GPU check of tiny M (the gemv configurations, codegen/matmul_gemv.c; also
    under each one forced, prepare.sh): live rows of every copy of the K loop (1, 2,
    3, 5, 6, 8, 9, 16), B read by 16-byte chunks (N a multiple of a chunk) or
    element by element, K split over 4 and 16 blocks by the rule or not split, K off the
    splits and the steps loaded ahead, N off a tile, broadcast batches, b stored
    transposed, and bias + gelu or bias + residual epilogues."""
    ins, ops, outs = {}, [], []
    # (name, batch a, batch b, M, N, K, b transposed, epilogue)
    cases = [("one", [], [], 1, 768, 768, False, "gelu"),
             ("long", [], [], 3, 200, 2100, False, "residual"),
             ("rows16", [2, 1], [1, 3], 16, 130, 600, False, "gelu"),
             ("bt", [], [], 6, 100, 1000, True, "residual"),
             ("odd", [], [], 9, 65, 333, False, "gelu"),
             ("wide", [], [], 2, 4100, 520, False, "residual"),
             ("vec8", [], [], 8, 264, 1000, False, "gelu"),
             ("vec5", [2, 1], [1, 2], 5, 128, 300, False, "residual")]
    for cn, ba, bb, m, n, k, bt, epi in cases:
        mm_case(ins, ops, outs, dt, cn, ba, bb, m, n, k, False, bt, epi)
    graph("mm_check_gemv_" + dt, ins, ops, outs)


if __name__ == "__main__":
    for t in ["f32", "bf16", "f16"]:
        mm_check_gemv(t)


def g14():
    """BERT-base's attention softmax at batch 8, sequence 256, bf16: the scores
    scaled, the padding mask added (broadcast over heads and rows), softmax."""
    b, h, s = 8, 12, 256
    graph("g14_attn_softmax_bf16",
          {"s": ("bf16", [b, h, s, s]), "mask": ("bf16", [b, 1, 1, s])},
          [op("mul_scalar", ["s"], "ss", scalar=0.125), op("add", ["ss", "mask"], "a"),
           op("max_dim", ["a"], "m", axis=3), op("sub", ["a", "m"], "d"),
           op("exp", ["d"], "e"), op("sum", ["e"], "z", axis=3), op("div", ["e", "z"], "y")],
          ["y"])


def g15():
    """BERT-base's residual add and layer norm at batch 8, sequence 256, bf16."""
    r, c = 2048, 768
    graph("g15_layernorm_bf16",
          {"x": ("bf16", [r, c]), "res": ("bf16", [r, c]), "g": ("bf16", [1, c]),
           "b": ("bf16", [1, c])},
          [op("add", ["x", "res"], "h"), op("mean", ["h"], "mu", axis=1),
           op("sub", ["h", "mu"], "d"), op("mul", ["d", "d"], "d2"),
           op("mean", ["d2"], "var", axis=1), op("add_scalar", ["var"], "ve", scalar=1e-12),
           op("sqrt", ["ve"], "sd"), op("div", ["d", "sd"], "n"), op("mul", ["n", "g"], "ng"),
           op("add", ["ng", "b"], "y")], ["y"])


if __name__ == "__main__":
    g14()
    g15()


def g16():
    """Issue 24's RMSNorm, bf16 32768 x 8192, as exporters write it: cast to f32,
    square, mean, add eps, reciprocal square root, scale, cast back, weight."""
    r, c = 32768, 8192
    graph("g16_rmsnorm_casts_bf16",
          {"x": ("bf16", [r, c]), "w": ("bf16", [1, c])},
          [op("cast", ["x"], "xf", dtype="f32"), op("pow_scalar", ["xf"], "x2", scalar=2.0),
           op("mean", ["x2"], "ms", axis=1), op("add_scalar", ["ms"], "me", scalar=1e-6),
           op("sqrt", ["me"], "rms"), op("recip", ["rms"], "r"), op("mul", ["xf", "r"], "n"),
           op("cast", ["n"], "nb", dtype="bf16"), op("mul", ["nb", "w"], "y")], ["y"])


def g17():
    """Issue 24's softmax, bf16 32768 x 8192."""
    softmax_at_dtype("g17_softmax_bf16_8192", [32768, 8192], "bf16")


def g22():
    """Rows past the static row cache in bf16: 1024 x 65536 (the dynamic one)."""
    softmax_at_dtype("g22_softmax_bf16_65536", [1024, 65536], "bf16")


def softmax_at_dtype(name, shape, dt):
    graph(name, {"x": (dt, shape)},
          [op("max_dim", ["x"], "m", axis=1), op("sub", ["x", "m"], "d"), op("exp", ["d"], "e"),
           op("sum", ["e"], "s", axis=1), op("div", ["e", "s"], "y")], ["y"])


if __name__ == "__main__":
    g16()
    g17()
    g22()


def conv_check(dt, nhwc=False):
    """The check of convolutions as implicit GEMMs (codegen/matmul_conv.c), on the
    cpu backend in make test (tests/cli/t_conv.sh, every tile configuration forced)
    and on the GPU: odd channel counts, strides, padding, dilation, groups, a
    non-square window, 1x1 convs read in place or gathered (stride 2), the stem's
    7x7, planes whose size is a multiple of a vector or not, and depthwise convs
    (NCHW the one-thread-per-output kernel, channels last their own); epilogues: bias, a
    folded batch norm (per-channel scale and shift) + relu, a residual. With nhwc,
    the same convs channels last (layout nhwc: x [N][H][W][C], weight
    [OC][KH][KW][C/g]) and two pools."""
    ins, ops, outs = {}, [], []
    name = "conv_check_" + ("nhwc_" if nhwc else "") + dt
    dt = "f32" if dt == "tf32" else dt  # tf32: f32 operands

    def nchw(n, c, h, w):  # a tensor's dims in the layout
        return [n, h, w, c] if nhwc else [n, c, h, w]
    # (name, N, C, H, W, OC, kh, kw, stride, pad, dil, groups, bias, epilogue)
    cases = [("c3", 2, 19, 13, 13, 40, 3, 3, 1, 1, 1, 1, True, "bnrelu"),
             ("p1x1", 2, 32, 10, 10, 48, 1, 1, 1, 0, 1, 1, False, "residual"),
             ("p1x1v", 2, 24, 8, 8, 72, 1, 1, 1, 0, 1, 1, True, "relu"),
             ("s2", 2, 24, 15, 15, 32, 3, 3, 2, 1, 1, 1, False, "bnrelu"),
             ("dil", 1, 32, 12, 12, 64, 3, 3, 1, 2, 2, 2, True, "none"),
             ("stem", 1, 3, 30, 30, 64, 7, 7, 2, 3, 1, 1, False, "bnrelu"),
             ("down", 2, 32, 14, 14, 64, 1, 1, 2, 0, 1, 1, False, "none"),
             ("wide", 1, 17, 9, 11, 33, 3, 1, 1, [1, 0], 1, 1, True, "residual"),
             # depthwise: NCHW the one-thread-per-output kernel, chunked, window
             # unrolled; channels last their own (codegen/matmul_depthwise.c):
             # 4, 2 or 1 output columns a thread (the width 16, 12, 10, 6: 4 and 2;
             # 11 and 7: 1), 16 bytes of channels (24, 16, 40) or fewer (12: 8
             # bytes of bf16, 6: 4, 7: one channel), stride 2, dilation 2, 5x5
             ("dw", 2, 24, 11, 11, 24, 3, 3, 1, 1, 1, 24, True, "relu"),
             ("dw5", 1, 16, 13, 13, 16, 5, 5, 2, 2, 1, 16, False, "bnrelu"),
             ("dw4", 2, 40, 12, 16, 40, 3, 3, 1, 1, 1, 40, True, "bnrelu"),
             ("dw2s", 1, 12, 11, 11, 12, 3, 3, 2, 1, 1, 12, False, "residual"),
             ("dwd", 1, 6, 10, 10, 6, 3, 3, 1, [2, 1], [2, 1], 6, True, "relu"),
             ("dw5w", 1, 24, 9, 12, 24, 5, 5, 1, 2, 1, 24, True, "none"),
             ("dwodd", 1, 7, 8, 11, 7, 3, 3, 1, 1, 1, 7, False, "relu")]
    for cn, n, c, h, w, oc, kh, kw, s, p, d, g, bias, epi in cases:
        ph, pw = (p, p) if isinstance(p, int) else p
        dh, dw = (d, d) if isinstance(d, int) else d
        oh = (h + 2 * ph - dh * (kh - 1) - 1) // s + 1
        ow = (w + 2 * pw - dw * (kw - 1) - 1) // s + 1
        ins[cn + "_x"] = (dt, nchw(n, c, h, w))
        ins[cn + "_w"] = (dt, [oc, kh, kw, c // g] if nhwc else [oc, c // g, kh, kw])
        cin = [cn + "_x", cn + "_w"]
        if bias:
            ins[cn + "_b"] = (dt, [oc])
            cin.append(cn + "_b")
        attrs = {"stride": s, "padding": [ph, pw], "dilation": d, "groups": g}
        if nhwc:
            attrs["layout"] = "nhwc"
        ops.append(op("conv2d", cin, cn + "_c", **attrs))
        y = cn + "_c"
        if epi == "bnrelu":
            ins[cn + "_scale"] = (dt, nchw(1, oc, 1, 1))
            ins[cn + "_shift"] = (dt, nchw(1, oc, 1, 1))
            ops.append(op("mul", [y, cn + "_scale"], cn + "_s"))
            ops.append(op("add", [cn + "_s", cn + "_shift"], cn + "_t"))
            ops.append(op("relu", [cn + "_t"], cn + "_y"))
            y = cn + "_y"
        elif epi == "relu":
            ops.append(op("relu", [y], cn + "_y"))
            y = cn + "_y"
        elif epi == "residual":
            ins[cn + "_res"] = (dt, nchw(n, oc, oh, ow))
            ops.append(op("add", [y, cn + "_res"], cn + "_y"))
            y = cn + "_y"
        outs.append(y)
        ops.append({"op": "sync"})
    # (name, kind, N, C, H, W, kernel, stride, pad)
    pools = [("mp", "max_pool2d", 2, 24, 11, 11, 3, 2, 1),
             ("ap", "avg_pool2d", 1, 40, 8, 8, 2, 2, 0)] if nhwc else []
    for pn, kind, n, c, h, w, k, s, p in pools:
        ins[pn + "_x"] = (dt, nchw(n, c, h, w))
        ops.append(op(kind, [pn + "_x"], pn + "_y", kernel=k, stride=s, padding=p,
                      layout="nhwc"))
        outs.append(pn + "_y")
        ops.append({"op": "sync"})
    graph(name, ins, ops, outs)


if __name__ == "__main__":
    for t in ["f32", "tf32", "bf16", "f16"]:
        conv_check(t)
        conv_check(t, nhwc=True)


def att_views(dt):
    """The GPU check of the attention op reading q, kt and v through views (the
    exporters' head split: [batch, seq, heads, dim] permuted to [batch, heads, seq,
    dim], kt through a permute or a swap_dims), so that one kernel runs each
    attention with no permute beside it (passes/views.c); c0 merges the heads back
    with a permute that its kernel writes through (passes/fuser_matmul.c), c2 too
    but keeps its own output, so that the permute runs apart (no traffic saved):
    keys off a step, head dims 32 to 64 and v's unlike q's, a bias and none."""
    ins, ops, outs = {}, [], []
    # (name, batch, heads, rows, keys, head dim, v's head dim, bias, kt by swap_dims)
    cases = [("c0", 2, 3, 77, 130, 64, 64, True, False),
             ("c1", 1, 4, 100, 100, 32, 48, False, True),
             ("c2", 2, 2, 33, 257, 40, 40, True, False)]
    for cn, b, h, m, n, d, e, bias, swap in cases:
        ins[cn + "_q"] = (dt, [b, m, h, d])
        ins[cn + "_v"] = (dt, [b, n, h, e])
        ops.append(op("permute", [cn + "_q"], cn + "_qh", axes=[0, 2, 1, 3]))
        if swap:   # k already split into heads: [b, h, n, d]
            ins[cn + "_k"] = (dt, [b, h, n, d])
            ops.append(op("swap_dims", [cn + "_k"], cn + "_kt", dims=[2, 3]))
        else:
            ins[cn + "_k"] = (dt, [b, n, h, d])
            ops.append(op("permute", [cn + "_k"], cn + "_kt", axes=[0, 2, 3, 1]))
        ops.append(op("permute", [cn + "_v"], cn + "_vh", axes=[0, 2, 1, 3]))
        a = [cn + "_qh", cn + "_kt", cn + "_vh"]
        if bias:
            ins[cn + "_bias"] = (dt, [b, 1, 1, n])
            a.append(cn + "_bias")
        ops.append(op("attention", a, cn + "_y", scalar=1.0 / d ** 0.5))
        if cn == "c1":
            outs.append(cn + "_y")
            continue
        # the heads merged back ([b, m, h, e]): c0's kernel writes through the
        # permute (passes/fuser_matmul.c); c2 keeps its own output too
        ops.append(op("permute", [cn + "_y"], cn + "_o", axes=[0, 2, 1, 3]))
        outs += [cn + "_o"] + ([cn + "_y"] if cn == "c2" else [])
    graph("att_views_" + dt, ins, ops, outs)


def mm_siblings(dt):
    """Matmuls sharing their first operand, one launch for each group
    (passes/siblings.c, passes/fuser_matmul.c, codegen/matmul_kernel.c): c0 the
    three projections of a layer, each with its bias and its head split written
    between them as exporters do; c1 a gate and an up projection whose product
    reads both (it stays apart); c2 odd sizes, a relu on one, a scaling on the
    other, whose raw result is an output too. The weights are graph inputs."""
    ins, ops, outs = {}, [], []
    ins["c0_x"] = (dt, [2, 77, 48])
    for p in ("q", "k", "v"):
        ins["c0_w" + p] = (dt, [1, 48, 64])
        ins["c0_b" + p] = (dt, [1, 1, 64])
        ops.append(op("matmul", ["c0_x", "c0_w" + p], "c0_m" + p))
        ops.append(op("add", ["c0_m" + p, "c0_b" + p], "c0_a" + p))
        ops.append(op("reshape", ["c0_a" + p], "c0_r" + p, shape=[2, 77, 4, 16]))
        ops.append(op("permute", ["c0_r" + p], "c0_" + p, axes=[0, 2, 1, 3]))
        outs.append("c0_" + p)
    ins["c1_x"] = (dt, [130, 40])
    ins["c1_wg"] = (dt, [40, 72])
    ins["c1_wu"] = (dt, [40, 72])
    ops += [op("matmul", ["c1_x", "c1_wg"], "c1_g"),
            op("sigmoid", ["c1_g"], "c1_sg"),
            op("mul", ["c1_g", "c1_sg"], "c1_s"),
            op("matmul", ["c1_x", "c1_wu"], "c1_u"),
            op("mul", ["c1_s", "c1_u"], "c1_y")]
    outs.append("c1_y")
    ins["c2_x"] = (dt, [3, 33, 20])
    ins["c2_w0"] = (dt, [1, 20, 24])
    ins["c2_w1"] = (dt, [1, 20, 24])
    ops += [op("matmul", ["c2_x", "c2_w0"], "c2_m0"),
            op("relu", ["c2_m0"], "c2_y0"),
            op("matmul", ["c2_x", "c2_w1"], "c2_m1"),
            op("mul_scalar", ["c2_m1"], "c2_y1", scalar=0.5)]
    outs += ["c2_y0", "c2_y1", "c2_m1"]
    graph("mm_siblings_" + dt, ins, ops, outs)


if __name__ == "__main__":
    for t in ["bf16", "f16"]:
        att_views(t)
    for t in ["f32", "bf16"]:
        mm_siblings(t)


def conv_join(dt):
    """A ResNet downsampling block (GPU numeric check of row 20 of
    docs/burn-fidelity.md): the residual add and ReLU in the shortcut conv's
    epilogue, reading the main path's last conv; compiled with --layout nhwc."""
    ins = {"x": (dt, [3, 32, 15, 15]), "w1": (dt, [32, 32, 1, 1]), "w2": (dt, [32, 32, 3, 3]),
           "w3": (dt, [72, 32, 1, 1]), "wd": (dt, [72, 32, 1, 1]), "bd": (dt, [72])}
    # both paths of stride 2 at the block's last convs (every other pixel)
    ops = [op("conv2d", ["x", "w1"], "c1"), op("relu", ["c1"], "r1"),
           op("conv2d", ["r1", "w2"], "c2", padding=1), op("relu", ["c2"], "r2"),
           op("conv2d", ["r2", "w3"], "c3", stride=2), op("conv2d", ["x", "wd", "bd"], "cd", stride=2),
           op("add", ["c3", "cd"], "s"), op("relu", ["s"], "y")]
    graph("conv_join_" + dt, ins, ops, ["y"])


if __name__ == "__main__":
    for t in ["f32", "bf16"]:
        conv_join(t)
