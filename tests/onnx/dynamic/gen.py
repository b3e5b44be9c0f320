#!/usr/bin/env python3
"""Small models whose inputs have dim_params (`batch`, `seq`), written the way
exporters write shape arithmetic (Shape, Gather, Unsqueeze, Concat into Reshape and
Expand), for `fusec compile` and `fusec run --dynamic` of a model compiled for every
size (tests/cli/t_dynamic.sh). gen.py [DIR] (default: beside it) remakes them.
Test-only: numpy and onnx from PyPI (docs/onnx.md).

  heads.onnx  x[batch,seq,16] -> Linear, ReLU, Linear; split into 4 heads by a
              Reshape to [batch, seq, 4, 4] made from Shape; softmax per head;
              back to [batch, seq, 16]; then LayerNorm
  cls.onnx    x[batch,seq,8]: a class token Expand-ed to [batch, 1, 8] by a shape
              made from Shape, put in front along seq, then a Linear of the flattened
              [batch*(seq+1), 8] and the mean over seq
  range.onnx  x[batch,seq] + Range(0, seq): the range cut to the size in the graph
  slice.onnx  x[batch,seq] * Slice(table[1,64], 0, seq): a table cut to a size
              (seq at most 64)
  mean.onnx   ReduceSum(x[batch,seq], 1) / Cast(Shape(x)[1]): a size used as a
              value, counted in the graph
  double.onnx Concat(x, x)[batch, 2*seq] + Range(0, 2*seq): a range as long as a
              product of a size (refused)
  recip.onnx  x[batch,seq] * (1 / Cast(Shape(x)[1])): a value made from a size
              that is not one (refused)
  expand_sum.onnx   the sum of x[batch,seq] Expand-ed to [batch, seq + 1]: a shape
              entry that is a sum (refused)
  reshape_sum.onnx  x[batch,seq] with a column of ones, the outer product of its
              rows flattened and Reshape-d to [batch, seq + 1, seq + 1]: two
              entries that are sums (refused: one can be -1, not both)

bert_micro.onnx and llama_micro.onnx are transformers' BertModel (with its padding
mask) and LlamaModel of one layer, hidden 16, exported by torch.onnx.export with
dynamic batch and seq (tests/bench/dynamic/export_dynamic.py --micro, on a machine
with torch); gen.py writes micro/NAME_BxS/: the inputs and onnxruntime's output at
three sizes (needs onnxruntime from PyPI)."""
import os
import sys

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)
T = onnx.TensorProto


def const(name, a):
    return nh.from_array(np.asarray(a), name)


def shape_of(x, idx, out, pre):
    """Nodes computing Shape(x)[idx] as a 1-D tensor `out`."""
    return [oh.make_node("Shape", [x], [pre + "_s"]),
            oh.make_node("Gather", [pre + "_s", pre + "_i"], [pre + "_g"], axis=0),
            oh.make_node("Unsqueeze", [pre + "_g", "ax0"], [out])], [const(pre + "_i", np.int64(idx))]


def save(name, nodes, inits, ins, outs):
    g = oh.make_graph(nodes, name, ins, outs, inits)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)], producer_name="gen.py")
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(root, name + ".onnx"))


def heads():
    n, inits = [], [const("ax0", np.array([0], np.int64))]
    for i, (a, b) in enumerate([(16, 32), (32, 16)]):
        inits += [const(f"w{i}", (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)),
                  const(f"b{i}", rng.standard_normal(b).astype(np.float32) * 0.1)]
    n += [oh.make_node("MatMul", ["x", "w0"], ["h0"]), oh.make_node("Add", ["h0", "b0"], ["h1"]),
          oh.make_node("Relu", ["h1"], ["h2"]), oh.make_node("MatMul", ["h2", "w1"], ["h3"]),
          oh.make_node("Add", ["h3", "b1"], ["h4"])]
    for idx, pre in ((0, "B"), (1, "S")):
        nn, ii = shape_of("x", idx, pre, pre)
        n += nn
        inits += ii
    inits += [const("c44", np.array([4, 4], np.int64)), const("c16", np.array([16], np.int64))]
    n += [oh.make_node("Concat", ["B", "S", "c44"], ["shp4"], axis=0),
          oh.make_node("Reshape", ["h4", "shp4"], ["r4"]),
          oh.make_node("Transpose", ["r4"], ["t4"], perm=[0, 2, 1, 3]),
          oh.make_node("Softmax", ["t4"], ["sm"], axis=-1),
          oh.make_node("Transpose", ["sm"], ["t5"], perm=[0, 2, 1, 3]),
          oh.make_node("Concat", ["B", "S", "c16"], ["shp3"], axis=0),
          oh.make_node("Reshape", ["t5", "shp3"], ["r3"]),
          oh.make_node("Add", ["r3", "x"], ["res"]),
          oh.make_node("LayerNormalization", ["res", "lg", "lb"], ["y"], axis=-1, epsilon=1e-5)]
    inits += [const("lg", rng.uniform(0.5, 1.5, 16).astype(np.float32)),
              const("lb", rng.standard_normal(16).astype(np.float32) * 0.1)]
    save("heads", n, inits, [oh.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", 16])],
         [oh.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", 16])])


def cls():
    inits = [const("ax0", np.array([0], np.int64)), const("c18", np.array([1, 8], np.int64)),
             const("m18", np.array([-1, 8], np.int64)),
             const("tok", rng.standard_normal((1, 1, 8)).astype(np.float32)),
             const("w", rng.standard_normal((8, 8)).astype(np.float32) / np.float32(np.sqrt(8)))]
    n, ii = shape_of("x", 0, "B", "B")
    inits += ii
    n += [oh.make_node("Concat", ["B", "c18"], ["shp"], axis=0),
          oh.make_node("Expand", ["tok", "shp"], ["cls"]),
          oh.make_node("Concat", ["cls", "x"], ["xc"], axis=1),
          oh.make_node("Reshape", ["xc", "m18"], ["flat"]),
          oh.make_node("MatMul", ["flat", "w"], ["lin"]),
          oh.make_node("Shape", ["xc"], ["xs"]),
          oh.make_node("Reshape", ["lin", "xs"], ["back"]),
          oh.make_node("Tanh", ["back"], ["th"]),
          oh.make_node("ReduceMean", ["th"], ["y"], axes=[1], keepdims=0)]
    save("cls", n, inits, [oh.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", 8])],
         [oh.make_tensor_value_info("y", T.FLOAT, ["batch", 8])])


def ranged():
    inits = [const("ax0", np.array([0], np.int64)), const("zero", np.float32(0)),
             const("one", np.float32(1))]
    n = [oh.make_node("Shape", ["x"], ["s"]),
         oh.make_node("Gather", ["s", "i1"], ["len"], axis=0),
         oh.make_node("Cast", ["len"], ["lenf"], to=T.FLOAT),
         oh.make_node("Range", ["zero", "lenf", "one"], ["r"]),
         oh.make_node("Add", ["x", "r"], ["y"])]
    inits.append(const("i1", np.int64(1)))
    save("range", n, inits, [oh.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"])],
         [oh.make_tensor_value_info("y", T.FLOAT, ["batch", "seq"])])


def sliced():
    inits = [const("ax0", np.array([0], np.int64)), const("z1", np.array([0], np.int64)),
             const("a1", np.array([1], np.int64)),
             const("table", rng.standard_normal((1, 64)).astype(np.float32))]
    n, ii = shape_of("x", 1, "S", "S")
    inits += ii
    n += [oh.make_node("Slice", ["table", "z1", "S", "a1"], ["cut"]),
          oh.make_node("Mul", ["x", "cut"], ["y"])]
    save("slice", n, inits, [oh.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"])],
         [oh.make_tensor_value_info("y", T.FLOAT, ["batch", "seq"])])


def mean():
    inits = [const("i1", np.int64(1)), const("ax1", np.array([1], np.int64))]
    n = [oh.make_node("Shape", ["x"], ["s"]),
         oh.make_node("Gather", ["s", "i1"], ["len"], axis=0),
         oh.make_node("Cast", ["len"], ["lenf"], to=T.FLOAT),
         oh.make_node("ReduceSum", ["x", "ax1"], ["sum"], keepdims=0),
         oh.make_node("Div", ["sum", "lenf"], ["y"])]
    save("mean", n, inits, [oh.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"])],
         [oh.make_tensor_value_info("y", T.FLOAT, ["batch"])])


def double():
    inits = [const("i1", np.int64(1)), const("two", np.int64(2)), const("zero", np.float32(0)),
             const("one", np.float32(1))]
    n = [oh.make_node("Shape", ["x"], ["s"]),
         oh.make_node("Gather", ["s", "i1"], ["len"], axis=0),
         oh.make_node("Mul", ["len", "two"], ["len2"]),
         oh.make_node("Cast", ["len2"], ["lenf"], to=T.FLOAT),
         oh.make_node("Range", ["zero", "lenf", "one"], ["r"]),
         oh.make_node("Concat", ["x", "x"], ["xx"], axis=1),
         oh.make_node("Add", ["xx", "r"], ["y"])]
    save("double", n, inits, [oh.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"])],
         [oh.make_tensor_value_info("y", T.FLOAT, ["batch", "2*seq"])])


def recip():
    inits = [const("i1", np.int64(1)), const("one", np.float32(1))]
    n = [oh.make_node("Shape", ["x"], ["s"]),
         oh.make_node("Gather", ["s", "i1"], ["len"], axis=0),
         oh.make_node("Cast", ["len"], ["lenf"], to=T.FLOAT),
         oh.make_node("Div", ["one", "lenf"], ["inv"]),
         oh.make_node("Mul", ["x", "inv"], ["y"])]
    save("recip", n, inits, [oh.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"])],
         [oh.make_tensor_value_info("y", T.FLOAT, ["batch", "seq"])])


def expand_sum():
    """x[batch,seq]: its sum Expand-ed to [batch, seq + 1], a size that is a sum."""
    inits = [const("i0", np.int64(0)), const("i1", np.int64(1)), const("one", np.array([1], np.int64))]
    n = [oh.make_node("Shape", ["x"], ["s"]),
         oh.make_node("Gather", ["s", "i0"], ["b"], axis=0),
         oh.make_node("Gather", ["s", "i1"], ["len"], axis=0),
         oh.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
         oh.make_node("Unsqueeze", ["len", "ax0"], ["lu"]),
         oh.make_node("Add", ["lu", "one"], ["l1"]),
         oh.make_node("Concat", ["bu", "l1"], ["shape"], axis=0),
         oh.make_node("ReduceSum", ["x"], ["t"], keepdims=1),
         oh.make_node("Expand", ["t", "shape"], ["y"])]
    inits.append(const("ax0", np.array([0], np.int64)))
    save("expand_sum", n, inits, [oh.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"])],
         [oh.make_tensor_value_info("y", T.FLOAT, ["batch", "seq1"])])


def reshape_sum():
    """x[batch,seq] with a column of ones (p: [batch, seq + 1]), the outer product of
    p's rows [batch, seq + 1, seq + 1] flattened, then Reshape-d back by a shape made
    from Shape: two shape entries that are sums (one can be -1, not both)."""
    inits = [const("i0", np.int64(0)), const("i1", np.int64(1)), const("ax0", np.array([0], np.int64)),
             const("ax1", np.array([1], np.int64)), const("ax2", np.array([2], np.int64)),
             const("one", np.array([1], np.int64)), const("m1", np.array([-1], np.int64)),
             const("ones", np.ones((1, 1), np.float32))]
    n = [oh.make_node("Shape", ["x"], ["s"]),
         oh.make_node("Gather", ["s", "i0"], ["b"], axis=0),
         oh.make_node("Gather", ["s", "i1"], ["len"], axis=0),
         oh.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
         oh.make_node("Unsqueeze", ["len", "ax0"], ["lu"]),
         oh.make_node("Concat", ["bu", "one"], ["cshape"], axis=0),
         oh.make_node("Expand", ["ones", "cshape"], ["col"]),
         oh.make_node("Concat", ["x", "col"], ["p"], axis=1),
         oh.make_node("Unsqueeze", ["p", "ax2"], ["pc"]),
         oh.make_node("Unsqueeze", ["p", "ax1"], ["pr"]),
         oh.make_node("Mul", ["pc", "pr"], ["q"]),
         oh.make_node("Reshape", ["q", "m1"], ["flat"]),
         oh.make_node("Add", ["lu", "one"], ["l1"]),
         oh.make_node("Concat", ["bu", "l1", "l1"], ["shape"], axis=0),
         oh.make_node("Reshape", ["flat", "shape"], ["y"])]
    save("reshape_sum", n, inits, [oh.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"])],
         [oh.make_tensor_value_info("y", T.FLOAT, ["batch", "seq1", "seq1"])])


def micro_refs():
    import onnxruntime as ort
    r = np.random.default_rng(1)
    for b, s in ((1, 1), (3, 7), (2, 64)):
        ids = r.integers(0, 64, (b, s)).astype(np.int64)
        mask = np.ones((b, s), np.int64)
        for i in range(b):
            mask[i, s - min(3 + 3 * i, s // 2):] = 0
        for m in ("bert", "llama"):
            d = os.path.join(root, "micro", f"{m}_{b}x{s}")
            os.makedirs(d, exist_ok=True)
            feed = {"input_ids": ids}
            if m == "bert":
                feed["attention_mask"] = mask
            for k, v in feed.items():
                np.save(os.path.join(d, k + ".npy"), v)
            sess = ort.InferenceSession(os.path.join(root, m + "_micro.onnx"))
            np.save(os.path.join(d, "last_hidden_state.npy"), sess.run(None, feed)[0])


heads()
cls()
mean()
double()
recip()
expand_sum()
reshape_sum()
micro_refs()
ranged()
sliced()
