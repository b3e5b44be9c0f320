#!/usr/bin/env python3
"""t43_Linear: a batched Linear as torch.onnx.export writes one (MatMul of a
[B, S, K] activation by a [K, N] weight, then Add of the bias), then an erf GELU
and a second Linear, the case the importer keeps flat so that the bias and the
GELU fuse into the matmul's epilogue (onnx/builders.c, Val.flat). The expected
output comes from numpy in float64. Also t44_GeluNot, t45_ViewAfterMatMul and
t46_GeluTanh (below). gen_linear.py [DIR] (default: beside it). Test-only: numpy
and onnx from PyPI (docs/onnx.md)."""
import math
import os
import sys

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def model_of(name, nodes, inputs, outputs, inits):
    """A checked opset-17 model; inputs and outputs: (name, shape) of float tensors."""
    def vi(n, shape):
        return oh.make_tensor_value_info(n, onnx.TensorProto.FLOAT, shape)
    g = oh.make_graph(nodes, name, [vi(*v) for v in inputs], [vi(*v) for v in outputs], inits)
    model = oh.make_model(g, opset_imports=[oh.make_opsetid('', 17)])
    onnx.checker.check_model(model)
    return model


def write_case(case, model, inputs, outputs):
    """root/case/model.onnx and its test_data_set_0; inputs and outputs: (name, array)."""
    d = os.path.join(root, case)
    os.makedirs(os.path.join(d, 'test_data_set_0'), exist_ok=True)
    onnx.save(model, os.path.join(d, 'model.onnx'))
    for kind, arrays in (('input', inputs), ('output', outputs)):
        for i, (n, a) in enumerate(arrays):
            with open(os.path.join(d, 'test_data_set_0', f'{kind}_{i}.pb'), 'wb') as fh:
                fh.write(nh.from_array(a, n).SerializeToString())
    print(d)


rng = np.random.default_rng(43)
B, S, K, N = 3, 5, 12, 7
x = rng.standard_normal((B, S, K)).astype(np.float32)
w1 = (rng.standard_normal((K, N)) / 3).astype(np.float32)
b1 = rng.standard_normal(N).astype(np.float32)
w2 = (rng.standard_normal((N, K)) / 3).astype(np.float32)
b2 = rng.standard_normal(K).astype(np.float32)
inits = [nh.from_array(w1, 'w1'), nh.from_array(b1, 'b1'), nh.from_array(w2, 'w2'),
         nh.from_array(b2, 'b2'), nh.from_array(np.array(math.sqrt(2), np.float32), 'r2'),
         nh.from_array(np.array(1, np.float32), 'one'),
         nh.from_array(np.array(0.5, np.float32), 'half')]
nodes = [oh.make_node('MatMul', ['x', 'w1'], ['m1']),
         oh.make_node('Add', ['b1', 'm1'], ['h']),            # bias first, as torch writes it
         oh.make_node('Div', ['h', 'r2'], ['hd']),
         oh.make_node('Erf', ['hd'], ['e']),
         oh.make_node('Add', ['e', 'one'], ['e1']),
         oh.make_node('Mul', ['h', 'e1'], ['g']),
         oh.make_node('Mul', ['g', 'half'], ['gh']),
         oh.make_node('MatMul', ['gh', 'w2'], ['m2']),
         oh.make_node('Add', ['m2', 'b2'], ['y2']),
         oh.make_node('Add', ['y2', 'x'], ['y'])]            # a residual: not flat
model = model_of('linear', nodes, [('x', [B, S, K])], [('y', [B, S, K])], inits)

erf = np.vectorize(math.erf)
xd = x.astype(np.float64)
h = xd @ w1 + b1
gh = h * (erf(h / math.sqrt(2)) + 1) * 0.5
y = (gh @ w2 + b2 + xd).astype(np.float32)
write_case('t43_Linear', model, [('x', x)], [('y', y)])

# t44_GeluNot: two look-alikes the importer must take node by node: a Div by 2, not
# sqrt 2, and a GELU whose Erf is also read by a graph output.
x = rng.standard_normal((4, 6)).astype(np.float32)
inits = [nh.from_array(np.array(2, np.float32), 'two'),
         nh.from_array(np.array(math.sqrt(2), np.float32), 'r2'),
         nh.from_array(np.array(1, np.float32), 'one'),
         nh.from_array(np.array(0.5, np.float32), 'half')]
nodes = [oh.make_node('Div', ['x', 'two'], ['d']), oh.make_node('Erf', ['d'], ['e']),
         oh.make_node('Add', ['e', 'one'], ['a']), oh.make_node('Mul', ['x', 'a'], ['h']),
         oh.make_node('Mul', ['h', 'half'], ['y']),
         oh.make_node('Div', ['x', 'r2'], ['d2']), oh.make_node('Erf', ['d2'], ['e2']),
         oh.make_node('Add', ['one', 'e2'], ['a2']), oh.make_node('Mul', ['a2', 'x'], ['h2']),
         oh.make_node('Mul', ['half', 'h2'], ['y2'])]
names = ('y', 'y2', 'e2')
model = model_of('gelu_not', nodes, [('x', [4, 6])], [(n, [4, 6]) for n in names], inits)
xd = x.astype(np.float64)
want = [xd * (erf(xd / 2) + 1) * 0.5, xd * (erf(xd / math.sqrt(2)) + 1) * 0.5, erf(xd / math.sqrt(2))]
write_case('t44_GeluNot', model, [('x', x)], [(n, w.astype(np.float32)) for n, w in zip(names, want)])

# t45_ViewAfterMatMul: GPT-2's Conv1D: a 2-D MatMul and bias, a Reshape to [B, S, N]
# (the last dim kept), then elementwise ops: they stay on the flat matrix and fuse.
x = rng.standard_normal((6, 8)).astype(np.float32)
w = (rng.standard_normal((8, 5)) / 2).astype(np.float32)
b = rng.standard_normal(5).astype(np.float32)
inits = [nh.from_array(w, 'w'), nh.from_array(b, 'b'),
         nh.from_array(np.array([2, 3, 5], np.int64), 'shape'),
         nh.from_array(np.array(0.5, np.float32), 'half')]
nodes = [oh.make_node('MatMul', ['x', 'w'], ['m']), oh.make_node('Add', ['m', 'b'], ['h']),
         oh.make_node('Reshape', ['h', 'shape'], ['v']), oh.make_node('Tanh', ['v'], ['t']),
         oh.make_node('Mul', ['t', 'half'], ['y'])]
model = model_of('view_after_matmul', nodes, [('x', [6, 8])], [('y', [2, 3, 5])], inits)
y = (np.tanh(x.astype(np.float64) @ w + b) * 0.5).reshape(2, 3, 5).astype(np.float32)
write_case('t45_ViewAfterMatMul', model, [('x', x)], [('y', y)])

# t46_GeluTanh: GPT-2's gelu_new written out (y), and the same with 0.044 for 0.044715
# (y2), which stays node by node.
x = rng.standard_normal((4, 6)).astype(np.float32)
inits = [nh.from_array(np.array(v, np.float32), n) for n, v in
         (('half', 0.5), ('three', 3.0), ('c', 0.044715), ('c2', 0.044),
          ('k', math.sqrt(2 / math.pi)), ('one', 1.0))]
nodes = []
for sfx, c in (('', 'c'), ('2', 'c2')):
    nodes += [oh.make_node('Mul', ['x', 'half'], ['h' + sfx]),
              oh.make_node('Pow', ['x', 'three'], ['p' + sfx]),
              oh.make_node('Mul', ['p' + sfx, c], ['q' + sfx]),
              oh.make_node('Add', ['x', 'q' + sfx], ['r' + sfx]),
              oh.make_node('Mul', ['r' + sfx, 'k'], ['s' + sfx]),
              oh.make_node('Tanh', ['s' + sfx], ['t' + sfx]),
              oh.make_node('Add', ['t' + sfx, 'one'], ['u' + sfx]),
              oh.make_node('Mul', ['h' + sfx, 'u' + sfx], ['y' + sfx])]
names = ('y', 'y2')
model = model_of('gelu_tanh', nodes, [('x', [4, 6])], [(n, [4, 6]) for n in names], inits)
xd = x.astype(np.float64)
want = [0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + c * xd ** 3))) for c in (0.044715, 0.044)]
write_case('t46_GeluTanh', model, [('x', x)], [(n, w.astype(np.float32)) for n, w in zip(names, want)])
