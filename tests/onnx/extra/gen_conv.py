#!/usr/bin/env python3
"""t47_ConvF32WeightsBf16: a bf16 Conv whose weight and bias are f32 initializers, as
torch.onnx.export's default (dynamo) exporter writes a bf16 model once it has folded
the batch norms into the convs. The importer converts such constants to the input's
dtype (onnx/builders.c, ob_const_as). The input arrives f32 and is cast to bf16, the
result cast back to f32; every value is a small integer, so that every sum is exact
in bf16 and the expected output (numpy) needs no tolerance. gen_conv.py [DIR]
(default: beside it). Test-only: numpy and onnx from PyPI (docs/onnx.md)."""
import os
import sys

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(47)
N, C, H, W, OC = 2, 4, 6, 5, 20
x = rng.integers(-2, 3, (N, C, H, W)).astype(np.float32)
w = rng.integers(-1, 2, (OC, C, 3, 3)).astype(np.float32)
b = rng.integers(-4, 5, OC).astype(np.float32)
# the reference: a 3x3 conv, padding 1, in float64
xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
y = np.zeros((N, OC, H, W))
for kh in range(3):
    for kw in range(3):
        y += np.einsum("nchw,oc->nohw", xp[:, :, kh:kh + H, kw:kw + W], w[:, :, kh, kw])
y += b[None, :, None, None]
y = y.astype(np.float32)
BF = onnx.TensorProto.BFLOAT16
nodes = [oh.make_node("Cast", ["x"], ["xb"], to=BF),
         oh.make_node("Conv", ["xb", "w", "b"], ["yb"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
         oh.make_node("Cast", ["yb"], ["y"], to=onnx.TensorProto.FLOAT)]
g = oh.make_graph(nodes, "t47", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                  [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, y.shape)],
                  [nh.from_array(w, "w"), nh.from_array(b, "b")])
model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
d = os.path.join(root, "t47_ConvF32WeightsBf16")
os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
onnx.save(model, os.path.join(d, "model.onnx"))
for kind, n, a in (("input", "x", x), ("output", "y", y)):
    with open(os.path.join(d, "test_data_set_0", f"{kind}_0.pb"), "wb") as fh:
        fh.write(nh.from_array(a, n).SerializeToString())
print(d)
