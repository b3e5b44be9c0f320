#!/usr/bin/env python3
"""Pooling cases the ONNX node tests leave out: 3-D MaxPool and AveragePool with pads,
strides, ceil_mode and count_include_pad, MaxPool with dilations (1-D, 2-D, 3-D)
and MaxPool's Indices output (both storage orders), in the node-test layout (tNN_OP_Kd/model.onnx, test_data_set_0) with
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
# MaxPool's Indices output (2-D): pads, strides, dilations, both storage orders
for kern,strides,pads,dil,order in [((3,3),(1,1),(1,1,1,1),(1,1),0),((2,3),(2,2),(0,1,1,0),(1,1),1),((2,2),(1,2),(1,0,0,1),(2,1),0)]:
    cases.append(('MaxPool',(2,2,7,6),dict(kernel_shape=kern,strides=strides,pads=pads,dilations=dil,storage_order=order),2))
for i,case in enumerate(cases):
    op,shape,attrs=case[:3]
    nout=case[3] if len(case) > 3 else 1
    x=rng.standard_normal(shape).astype(np.float32)
    names=['y','indices'][:nout]
    node=oh.make_node(op,['x'],names,**attrs)
    g=oh.make_graph([node],'g',[oh.make_tensor_value_info('x',1,shape)],[oh.make_tensor_value_info(n,1 if n=='y' else 7,None) for n in names])
    m=oh.make_model(g,opset_imports=[oh.make_opsetid('',19)]); m.ir_version=9
    ys=ort.InferenceSession(m.SerializeToString()).run(None,{'x':x})
    d=f'{root}/t{i:02d}_{op}_{len(shape)-2}d'; os.makedirs(d+'/test_data_set_0',exist_ok=True)
    for k,(n,y) in enumerate(zip(names,ys)):
        g.output[k].CopyFrom(oh.make_tensor_value_info(n,1 if n=='y' else 7,y.shape))
    onnx.save(m,d+'/model.onnx')
    open(d+'/test_data_set_0/input_0.pb','wb').write(nh.from_array(x,'x').SerializeToString())
    for k,(n,y) in enumerate(zip(names,ys)):
        open(d+f'/test_data_set_0/output_{k}.pb','wb').write(nh.from_array(y,n).SerializeToString())
print(len(cases))
