#!/usr/bin/env python3
"""Pooling cases the ONNX node tests leave out: 3-D MaxPool and AveragePool with pads,
strides, ceil_mode and count_include_pad, and MaxPool with dilations (1-D, 2-D,
3-D), in the node-test layout (tNN_OP_Kd/model.onnx, test_data_set_0) with
onnxruntime's outputs. `make test` runs the stored folders (onnx_conformance
--strict); this script remakes them: gen.py [DIR] (default: beside it). Test-only:
numpy, onnx and onnxruntime from PyPI (docs/onnx.md)."""
import os
import sys

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import onnxruntime as ort

root=sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng=np.random.default_rng(0)
cases=[]
# 3-D pools
for op in ['MaxPool','AveragePool']:
    for kern,strides,pads,ceil,cip in [((2,3,2),(1,2,1),(0,1,1,1,0,1),0,0),((3,2,2),(2,1,2),(1,0,1,1,1,0),1,0),((2,2,2),(2,2,2),(1,1,1,1,1,1),0,1),((3,3,3),(1,1,1),(1,1,1,1,1,1),0,0)]:
        attrs=dict(kernel_shape=kern,strides=strides,pads=pads,ceil_mode=ceil)
        if op=='AveragePool': attrs['count_include_pad']=cip
        cases.append((op,(1,2,5,6,7),attrs))
# dilated max pools 2-D and 1-D and 3-D
for kern,strides,pads,dil,ceil in [((2,2),(1,1),(0,0,0,0),(2,2),0),((3,2),(2,1),(1,0,2,1),(2,3),0),((2,3),(2,2),(1,1,1,1),(1,2),1)]:
    cases.append(('MaxPool',(1,3,9,10),dict(kernel_shape=kern,strides=strides,pads=pads,dilations=dil,ceil_mode=ceil)))
cases.append(('MaxPool',(2,3,11),dict(kernel_shape=(3,),strides=(2,),pads=(1,2),dilations=(2,))))
cases.append(('MaxPool',(1,2,6,7,8),dict(kernel_shape=(2,2,3),strides=(1,2,1),pads=(0,1,1,1,0,1),dilations=(2,1,2))))
for i,(op,shape,attrs) in enumerate(cases):
    x=rng.standard_normal(shape).astype(np.float32)
    node=oh.make_node(op,['x'],['y'],**attrs)
    g=oh.make_graph([node],'g',[oh.make_tensor_value_info('x',1,shape)],[oh.make_tensor_value_info('y',1,None)])
    m=oh.make_model(g,opset_imports=[oh.make_opsetid('',19)]); m.ir_version=9
    y=ort.InferenceSession(m.SerializeToString()).run(None,{'x':x})[0]
    d=f'{root}/t{i:02d}_{op}_{len(shape)-2}d'; os.makedirs(d+'/test_data_set_0',exist_ok=True)
    g.output[0].CopyFrom(oh.make_tensor_value_info('y',1,y.shape))
    onnx.save(m,d+'/model.onnx')
    open(d+'/test_data_set_0/input_0.pb','wb').write(nh.from_array(x,'x').SerializeToString())
    open(d+'/test_data_set_0/output_0.pb','wb').write(nh.from_array(y,'y').SerializeToString())
print(len(cases))
