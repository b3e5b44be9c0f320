#!/usr/bin/env python3
"""Cases the ONNX node tests leave out for the mappings of docs/onnx.md that are
compositions (Resize and Upsample on NCHW with every mode, antialiasing, axes and
keep_aspect_ratio_policy; ConvTranspose with groups, strides, pads, output_padding,
dilations, auto_pad and output_shape; CumSum of integers; Einsum of three operands
and with an ellipsis; GatherND with batch_dims and negative indices; OneHot, LRN, opset-11
Hardmax; SoftmaxCrossEntropyLoss with weights and
ignore_index; Atan, Asin and Acos over their whole range; per-axis QuantizeLinear and
DequantizeLinear; ScatterND and ScatterElements with duplicate indices), in the node-test layout (tNN_OP/model.onnx, test_data_set_0) with
onnxruntime's outputs. Scales, sizes, roi, axes and depth are initializers.
`make test` runs the stored folders (onnx_conformance --strict); this script
remakes them: gen.py [DIR] (default: beside it). Test-only: numpy, onnx and
onnxruntime from PyPI (docs/onnx.md)."""
import os
import sys

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import onnxruntime as ort

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)
f32 = np.float32
cases = []   # (op, [(name, array, initializer?)], attrs, opset, noutputs)


def x4(shape=(1, 2, 5, 7), dt=f32):
    return rng.standard_normal(shape).astype(dt)


def resize(attrs, scales=None, sizes=None, roi=None, opset=19, x=None):
    ins = [('x', x4() if x is None else x, False),
           ('roi', np.array(roi if roi is not None else [], f32), True),
           ('scales', np.array(scales if scales is not None else [], f32), True)]
    if sizes is not None:
        ins.append(('sizes', np.array(sizes, np.int64), True))
    cases.append(('Resize', ins, attrs, opset, 1))


resize(dict(mode='nearest'), scales=[1, 1, 2, 1.5])
resize(dict(mode='nearest', coordinate_transformation_mode='asymmetric', nearest_mode='floor'),
       sizes=[1, 2, 3, 4])
resize(dict(mode='nearest', coordinate_transformation_mode='align_corners', nearest_mode='ceil'),
       scales=[1, 1, 0.6, 2])
resize(dict(mode='nearest', nearest_mode='round_prefer_ceil'), scales=[1, 1, 3, 2],
       x=rng.integers(-50, 50, (1, 2, 3, 4)).astype(np.int32))
resize(dict(mode='linear'), scales=[1, 1, 2, 2])
resize(dict(mode='linear', coordinate_transformation_mode='align_corners'), sizes=[1, 2, 8, 3])
resize(dict(mode='linear', coordinate_transformation_mode='pytorch_half_pixel'),
       sizes=[1, 2, 9, 11])
resize(dict(mode='linear', coordinate_transformation_mode='half_pixel_symmetric'),
       scales=[1, 1, 1.7, 0.6])
resize(dict(mode='linear', antialias=1), sizes=[1, 2, 3, 3])
resize(dict(mode='cubic'), scales=[1, 1, 1.5, 0.75])
resize(dict(mode='cubic', antialias=1), sizes=[1, 2, 2, 3])
resize(dict(mode='cubic', cubic_coeff_a=-0.5, exclude_outside=1), sizes=[1, 2, 7, 4])
resize(dict(mode='linear', axes=[2, 3], keep_aspect_ratio_policy='not_larger'), sizes=[10, 4])
resize(dict(mode='nearest', axes=[3, 2], keep_aspect_ratio_policy='not_smaller'), sizes=[9, 4])
resize(dict(mode='linear', coordinate_transformation_mode='tf_crop_and_resize',
            extrapolation_value=0.5), sizes=[1, 2, 4, 6], roi=[0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3])
cases.append(('Upsample', [('x', x4((1, 2, 3, 4)), False),
                           ('scales', np.array([1, 1, 2, 3], f32), True)],
              dict(mode='nearest'), 9, 1))
cases.append(('Upsample', [('x', x4((1, 2, 3, 4)), False),
                           ('scales', np.array([1, 1, 2, 1.5], f32), True)],
              dict(mode='linear'), 9, 1))


def convt(xs, ws, attrs, bias=False):
    ins = [('x', x4(xs), False), ('w', x4(ws), True)]
    if bias:
        ins.append(('b', x4((ws[1] * attrs.get('group', 1),)), True))
    cases.append(('ConvTranspose', ins, attrs, 17, 1))


convt((2, 4, 5, 6), (4, 3, 3, 3), dict(group=2, strides=[2, 3], pads=[1, 0, 2, 1],
                                       output_padding=[1, 2]), bias=True)
convt((1, 4, 5, 6), (4, 1, 2, 3), dict(group=4, dilations=[2, 1], strides=[1, 2]))
convt((1, 3, 4, 5), (3, 2, 3, 3), dict(strides=[2, 2], auto_pad='SAME_UPPER'), bias=True)
convt((1, 3, 4, 5), (3, 2, 3, 3), dict(strides=[2, 2], auto_pad='SAME_LOWER'))
convt((1, 3, 4, 5), (3, 2, 3, 2), dict(strides=[3, 2], output_shape=[12, 11]))
convt((2, 4, 7), (4, 3, 4), dict(group=2, strides=[3], pads=[2, 1], dilations=[2]), bias=True)
convt((1, 2, 4, 4), (2, 2, 3, 3), dict(pads=[2, 2, 2, 2]))

cases.append(('CumSum', [('x', rng.integers(-9, 9, (3, 9)).astype(np.int32), False),
                         ('axis', np.array(1, np.int64), True)],
              dict(exclusive=1, reverse=1), 14, 1))
cases.append(('CumSum', [('x', x4((9, 2)), False), ('axis', np.array(0, np.int32), True)],
              {}, 14, 1))
cases.append(('Einsum', [('a', x4((2, 3, 4)), False), ('b', x4((2, 4, 5)), False),
                         ('c', x4((2, 5, 3)), False)], dict(equation='bij,bjk,bkl->bil'), 12, 1))
cases.append(('Einsum', [('a', x4((2, 3, 4, 5)), False), ('b', x4((2, 3, 5, 2)), False)],
              dict(equation='...ij,...jk'), 12, 1))
cases.append(('Einsum', [('a', x4((3, 4, 5)), False)], dict(equation='abc->ca'), 12, 1))
cases.append(('Einsum', [('a', x4((4, 3, 3)), False), ('b', x4((3,)), False)],
              dict(equation='bii,i->b'), 12, 1))
cases.append(('GatherND', [('x', x4((2, 3, 4, 5)), False),
                           ('i', np.array([[[1, -1], [0, 2]], [[2, 3], [-3, 0]]], np.int64), True)],
              dict(batch_dims=1), 13, 1))
cases.append(('OneHot', [('i', np.array([[1, -2, 3], [0, 4, -1]], np.int64), False),
                         ('depth', np.array(5, np.int64), True),
                         ('v', np.array([-1, 2], f32), True)], dict(axis=1), 11, 1))
cases.append(('LRN', [('x', x4((1, 6, 3, 3)), False)], dict(size=5, alpha=0.01, beta=0.6,
                                                            bias=2.0), 13, 1))
cases.append(('Hardmax', [('x', x4((2, 3, 4)), False)], dict(axis=1), 11, 1))
cases.append(('SoftmaxCrossEntropyLoss',
              [('x', x4((2, 4, 3)), False),
               ('t', np.array([[0, 3, 1], [2, 2, 0]], np.int64), False),
               ('w', np.array([0.5, 1, 2, 0.25], f32), True)],
              dict(reduction='sum', ignore_index=2), 13, 2))
cases.append(('NegativeLogLikelihoodLoss',
              [('x', x4((3, 5)), False), ('t', np.array([4, 0, 2], np.int64), False)],
              dict(reduction='mean'), 13, 1))
cases.append(('Atan', [('x', (x4((4, 25)) * 30).astype(f32), False)], {}, 7, 1))
cases.append(('Asin', [('x', np.linspace(-1, 1, 41, dtype=f32), False)], {}, 7, 1))
cases.append(('Acos', [('x', np.linspace(-1, 1, 41, dtype=f32), False)], {}, 7, 1))
cases.append(('QuantizeLinear', [('x', (x4((2, 3, 4)) * 50).astype(f32), False),
                                 ('s', np.array([0.5, 1, 2], f32), True),
                                 ('z', np.array([-3, 0, 5], np.int8), True)], dict(axis=1), 13, 1))
cases.append(('DequantizeLinear', [('x', rng.integers(0, 255, (2, 3, 4)).astype(np.uint8), False),
                                   ('s', np.array([0.5, 1, 2, 4], f32), True),
                                   ('z', np.array([128, 0, 5, 255], np.uint8), True)],
              dict(axis=-1), 13, 1))
cases.append(('ScatterND', [('x', x4((4, 3, 2)), False),
                            ('i', np.array([[1, 0], [3, 2], [1, 0]], np.int64), True),
                            ('u', x4((3, 2)), False)], dict(reduction='max'), 18, 1))
cases.append(('ScatterElements', [('x', x4((3, 4)), False),
                                  ('i', np.array([[1, -1, 1], [0, 0, 3]], np.int64), True),
                                  ('u', x4((2, 3)), False)], dict(axis=1, reduction='mul'), 18, 1))

TYPES = {np.dtype(f32): 1, np.dtype(np.int64): 7, np.dtype(np.int32): 6, np.dtype(np.int8): 3,
         np.dtype(np.uint8): 2}
for i, (op, ins, attrs, opset, nout) in enumerate(cases):
    names = ['y', 'y2'][:nout]
    node = oh.make_node(op, [n for n, _, _ in ins], names, **attrs)
    inputs = [oh.make_tensor_value_info(n, TYPES[a.dtype], a.shape) for n, a, k in ins if not k]
    inits = [nh.from_array(a, n) for n, a, k in ins if k]
    g = oh.make_graph([node], 'g', inputs, [onnx.ValueInfoProto(name=n) for n in names],
                      initializer=inits)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid('', opset)])
    m.ir_version = 8
    feed = {n: a for n, a, k in ins if not k}
    ys = ort.InferenceSession(m.SerializeToString()).run(None, feed)
    for k, (n, y) in enumerate(zip(names, ys)):
        g.output[k].CopyFrom(oh.make_tensor_value_info(n, TYPES[y.dtype], y.shape))
    d = f'{root}/t{i:02d}_{op}'
    os.makedirs(d + '/test_data_set_0', exist_ok=True)
    onnx.save(m, d + '/model.onnx')
    for k, (n, a, _) in enumerate([c for c in ins if not c[2]]):
        open(d + f'/test_data_set_0/input_{k}.pb', 'wb').write(nh.from_array(a, n).SerializeToString())
    for k, (n, y) in enumerate(zip(names, ys)):
        open(d + f'/test_data_set_0/output_{k}.pb', 'wb').write(nh.from_array(y, n).SerializeToString())
print(len(cases))
